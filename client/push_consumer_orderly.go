package client

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// Orderly consumption (RocketMQ's ConsumeMessageOrderlyService): each queue
// is consumed by one worker at a time, in offset order, and — in
// clustering — only while this consumer holds the queue's lock on the
// broker (LOCK_BATCH_MQ), so that during a rebalance the old and the new
// owner never consume a queue together.
const (
	// lockRenewInterval is how often the locks are renewed (RocketMQ's
	// 20 s; brokers let a lock expire after 60 s).
	lockRenewInterval = 20 * time.Second
	// lockClientExpiry is how long a lock is trusted after it was last
	// granted (RocketMQ's 30 s).
	lockClientExpiry = 30 * time.Second
	// releaseWait bounds the wait for a released queue's running handler
	// before its lock is given back (RocketMQ's 1 s).
	releaseWait = time.Second
)

// setupOrderly installs the lock hooks (clustering) on the base.
func (p *PushConsumer) setupOrderly() {
	gm := p.gm
	if gm.cfg.model != Clustering {
		return
	}
	gm.lockNew = func(ctx context.Context, mqs []MessageQueue) []MessageQueue { return p.lockQueues(ctx, mqs) }
	gm.unlockGone = p.unlockQueues
	gm.pullable = lockValid
	p.relock = make(chan struct{}, 1)
	leaders := map[string]string{}
	gm.c.onRoute(func(r *Route) {
		// A new leader has none of the locks: take them again at once.
		changed := false
		gm.mu.Lock()
		for _, bd := range r.Data.BrokerDatas {
			if l := bd.BrokerAddrs[0]; l != "" && leaders[bd.BrokerName] != l {
				changed = changed || leaders[bd.BrokerName] != ""
				leaders[bd.BrokerName] = l
			}
		}
		gm.mu.Unlock()
		if changed {
			select {
			case p.relock <- struct{}{}:
			default:
			}
		}
	})
}

// runLockRenewal renews every assigned queue's lock every 20 s and when a
// broker group changed leader.
func (p *PushConsumer) runLockRenewal() {
	gm := p.gm
	gm.loops.Add(1)
	go func() {
		defer gm.loops.Done()
		t := time.NewTicker(lockRenewInterval)
		defer t.Stop()
		for {
			select {
			case <-gm.stop:
				return
			case <-t.C:
			case <-p.relock:
			}
			ctx, cancel := context.WithTimeout(gm.runCtx, gm.cfg.requestTimeout)
			p.renewLocks(ctx)
			cancel()
		}
	}()
}

func lockValid(qs *queueState) bool {
	at := qs.lockedAt.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < lockClientExpiry
}

// lockQueues asks each broker group's leader for the locks of mqs and
// returns those granted.
func (p *PushConsumer) lockQueues(ctx context.Context, mqs []MessageQueue) []MessageQueue {
	var granted []MessageQueue
	for _, group := range groupByBroker(mqs) {
		got, err := p.lockCall(ctx, remoting.ReqLockBatchMQ, group)
		if err != nil {
			p.gm.c.log.Debug("lock queues", "broker", group[0].BrokerName, "error", err)
			continue
		}
		granted = append(granted, got...)
	}
	return granted
}

// renewLocks renews the locks of the assigned queues; a queue whose lock
// went to another consumer stops being pulled and consumed.
func (p *PushConsumer) renewLocks(ctx context.Context) {
	gm := p.gm
	gm.mu.Lock()
	queues := map[MessageQueue]*queueState{}
	for mq, qs := range gm.queues {
		queues[mq] = qs
	}
	gm.mu.Unlock()
	for _, group := range groupByBroker(slices.Collect(maps.Keys(queues))) {
		got, err := p.lockCall(ctx, remoting.ReqLockBatchMQ, group)
		if err != nil {
			continue // trusted until it expires client-side
		}
		now := time.Now().UnixNano()
		for _, mq := range group {
			if slices.Contains(got, mq) {
				queues[mq].lockedAt.Store(now)
			} else {
				queues[mq].lockedAt.Store(0)
			}
		}
	}
}

// unlockQueues gives released queues back once their running handler is
// done (waiting at most releaseWait; past it the broker lock expires by
// itself), committing their final offsets first.
func (p *PushConsumer) unlockQueues(ctx context.Context, gone []*queueState) {
	var free []*queueState
	for _, qs := range gone {
		t := time.NewTimer(releaseWait)
		select {
		case qs.serial <- struct{}{}: // held for good: the queue is gone
			free = append(free, qs)
		case <-t.C:
			p.gm.c.log.Warn("orderly queue still consuming; its lock will expire", "queue", qs.mq.String())
		}
		t.Stop()
	}
	if len(free) == 0 {
		return
	}
	if err := p.gm.commit(ctx, free); err != nil {
		p.gm.c.log.Warn("commit before unlock", "error", err)
	}
	var mqs []MessageQueue
	for _, qs := range free {
		mqs = append(mqs, qs.mq)
		qs.lockedAt.Store(0)
	}
	for _, group := range groupByBroker(mqs) {
		if _, err := p.lockCall(ctx, remoting.ReqUnlockBatchMQ, group); err != nil {
			p.gm.c.log.Debug("unlock queues", "error", err)
		}
	}
}

// lockCall sends LOCK_BATCH_MQ or UNLOCK_BATCH_MQ for mqs, all of one
// broker group, to its leader; for a lock it returns the queues granted.
func (p *PushConsumer) lockCall(ctx context.Context, code int16, mqs []MessageQueue) ([]MessageQueue, error) {
	raw, err := json.Marshal(lockRequest(p.gm.cfg.group, p.gm.c.clientID, mqs))
	if err != nil {
		return nil, err
	}
	resp, err := p.gm.callLeader(ctx, mqs[0], remoting.NewRequest(code, nil, raw))
	if err != nil || code != remoting.ReqLockBatchMQ {
		return nil, err
	}
	var ans protocol.LockBatchResponse
	if err := json.Unmarshal(resp.Body, &ans); err != nil {
		return nil, err
	}
	var out []MessageQueue
	for _, q := range ans.LockOKMQSet {
		out = append(out, MessageQueue(q))
	}
	return out, nil
}

// lockRequest is the body of LOCK_BATCH_MQ and UNLOCK_BATCH_MQ.
func lockRequest(group, clientID string, mqs []MessageQueue) protocol.LockBatchRequest {
	body := protocol.LockBatchRequest{ConsumerGroup: group, ClientID: clientID}
	for _, mq := range mqs {
		body.MQSet = append(body.MQSet, protocol.MessageQueue(mq))
	}
	return body
}

// groupByBroker splits mqs by broker group, in a stable order.
func groupByBroker(mqs []MessageQueue) [][]MessageQueue {
	slices.SortFunc(mqs, compareQueues)
	var out [][]MessageQueue
	idx := map[string]int{}
	for _, mq := range mqs {
		i, ok := idx[mq.BrokerName]
		if !ok {
			i = len(out)
			idx[mq.BrokerName] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], mq)
	}
	return out
}

// consumeOrderly consumes qs's cached messages in order unless another
// worker already does; a task queued meanwhile is taken care of by
// re-queueing once the token is given back.
func (p *PushConsumer) consumeOrderly(qs *queueState) {
	select {
	case qs.serial <- struct{}{}:
	default:
		return // another worker consumes this queue
	}
	again := p.drainOrderly(qs)
	<-qs.serial
	if again && qs.pq.count() > 0 && !qs.pq.isDropped() && !p.stopping.Load() {
		p.tasks.push(consumeTask{qs: qs})
	}
}

// drainOrderly runs the handler over qs's messages, oldest first, until
// none is left (true) or the queue is suspended, lost or stopped (false).
func (p *PushConsumer) drainOrderly(qs *queueState) bool {
	for {
		if qs.pq.isDropped() || p.stopping.Load() {
			return false
		}
		if p.gm.pullable != nil && !p.gm.pullable(qs) {
			p.later(qs, lockWait)
			return false
		}
		msgs := qs.pq.head(p.cfg.batchSize)
		if len(msgs) == 0 {
			return true
		}
		p.restoreRetryTopic(msgs)
		if p.handle(msgs) == ConsumeSuccess || p.deadLetter(qs, msgs) {
			qs.pq.remove(msgs)
			continue
		}
		for _, m := range msgs {
			m.ReconsumeTimes++
		}
		p.later(qs, p.cfg.suspendQueue)
		return false
	}
}

// deadLetter sends back messages retried WithMaxReconsumeTimes times
// (the broker moves them to %DLQ%group) and reports whether all went.
func (p *PushConsumer) deadLetter(qs *queueState, msgs []*message.MessageExt) bool {
	for _, m := range msgs {
		if int(m.ReconsumeTimes) < p.cfg.maxReconsume {
			return false
		}
	}
	for _, m := range msgs {
		if err := p.sendBackFn(qs.mq, m); err != nil {
			return false
		}
	}
	return true
}

// later consumes qs again after d.
func (p *PushConsumer) later(qs *queueState, d time.Duration) {
	p.retries.Add(1)
	go func() {
		defer p.retries.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			p.tasks.push(consumeTask{qs: qs})
		case <-p.stopWork:
		}
	}()
}
