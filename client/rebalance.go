package client

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// lockRetry is how soon an orderly consumer tries again to lock queues
// it was allocated but could not lock.
const lockRetry = time.Second

// rebalance reallocates every subscribed topic's queues (RocketMQ's
// RebalanceImpl.doRebalance): broadcasting takes all of them, clustering
// its share among the group's consumers, as GET_CONSUMER_LIST_BY_GROUP
// lists them. A topic whose route or consumer list cannot be had keeps its
// current queues until the next round.
func (gm *groupMember) rebalance(ctx context.Context) {
	gm.mu.Lock()
	if gm.fixed || gm.closed {
		gm.mu.Unlock()
		return
	}
	topics := slices.Sorted(maps.Keys(gm.subs))
	gm.mu.Unlock()
	for _, t := range topics {
		want, ok := gm.allocate(ctx, t)
		if ok {
			gm.reassign(ctx, t, want)
		}
	}
}

// allocate returns this consumer's share of topic's queues.
func (gm *groupMember) allocate(ctx context.Context, topic string) ([]MessageQueue, bool) {
	r, err := gm.c.routes.refresh(ctx, topic)
	if err != nil {
		gm.c.log.Debug("rebalance: no route", "topic", topic, "error", err)
		return nil, false
	}
	if gm.cfg.model == Broadcasting {
		return r.ReadQueues, true
	}
	ids, err := gm.consumerIDs(ctx, r)
	if err != nil {
		gm.c.log.Debug("rebalance: no consumer list", "topic", topic, "error", err)
		return nil, false
	}
	if !slices.Contains(ids, gm.c.clientID) {
		// This node has not had our heartbeat yet: take nothing rather
		// than a share computed without us; the next round fixes it.
		return nil, false
	}
	gm.mu.Lock()
	gm.lastSeen[topic] = ids
	gm.mu.Unlock()
	return gm.cfg.allocate(gm.cfg.group, gm.c.clientID, r.ReadQueues, ids), true
}

// consumerIDs asks a node of the topic's route for the group's consumer
// ids (sorted), the leaders first, moving on when one fails.
func (gm *groupMember) consumerIDs(ctx context.Context, r *Route) ([]string, error) {
	var lastErr error
	for _, bd := range r.Data.BrokerDatas {
		for _, addr := range brokerAddrs(bd) {
			var body protocol.ConsumerListBody
			req := remoting.NewRequest(remoting.ReqGetConsumerListByGroup, map[string]string{"consumerGroup": gm.cfg.group}, nil)
			resp, err := gm.c.call(ctx, addr, req)
			if err == nil {
				err = json.Unmarshal(resp.Body, &body)
			}
			if err == nil {
				slices.Sort(body.ConsumerIDList)
				return slices.Compact(body.ConsumerIDList), nil
			}
			lastErr = err
			if ctx.Err() != nil {
				return nil, err
			}
		}
	}
	if lastErr == nil {
		lastErr = ErrBrokerNotFound
	}
	return nil, lastErr
}

// reassign starts pull loops for the queues of topic newly in want and
// stops (committing their offsets) those no longer in it. Orderly
// consumers first lock the new queues on their brokers and take only
// those granted.
func (gm *groupMember) reassign(ctx context.Context, topic string, want []MessageQueue) {
	gm.mu.Lock()
	if gm.closed {
		gm.mu.Unlock()
		return
	}
	var gone []*queueState
	for mq, qs := range gm.queues {
		if mq.Topic == topic && !slices.Contains(want, mq) {
			gone = append(gone, qs)
			delete(gm.queues, mq)
		}
	}
	var adds []MessageQueue
	for _, mq := range want {
		if _, ok := gm.queues[mq]; !ok {
			adds = append(adds, mq)
		}
	}
	gm.mu.Unlock()
	gm.release(gone)
	if len(adds) > 0 && gm.lockNew != nil {
		n := len(adds)
		if adds = gm.lockNew(ctx, adds); len(adds) < n {
			// Their old owner has not unlocked them yet: try again soon
			// rather than at the next periodic rebalance.
			time.AfterFunc(lockRetry, gm.triggerRebalance)
		}
	}
	gm.mu.Lock()
	defer gm.mu.Unlock()
	if gm.closed {
		return
	}
	for _, mq := range adds {
		if _, ok := gm.queues[mq]; !ok {
			qs := gm.startQueue(mq, -1, 0)
			if gm.lockNew != nil {
				qs.lockedAt.Store(time.Now().UnixNano())
			}
			gm.queues[mq] = qs
		}
	}
}

// release stops the pull loops of queues no longer ours and commits their
// offsets, so the consumer that takes them over starts where we stopped.
func (gm *groupMember) release(gone []*queueState) {
	if len(gone) == 0 {
		return
	}
	for _, qs := range gone {
		qs.cancel()
		qs.pq.drop()
	}
	for _, qs := range gone {
		<-qs.done
	}
	if gm.active {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), gm.cfg.requestTimeout)
	defer cancel()
	if err := gm.commit(ctx, gone); err != nil {
		gm.c.log.Warn("commit released queues", "error", err)
	}
	if gm.unlockGone != nil {
		gm.unlockGone(ctx, gone)
	}
}
