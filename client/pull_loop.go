package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

const (
	// pullErrorBackoff is how long a queue waits after a pull failed with
	// anything but a failover error (RocketMQ's 3 s).
	pullErrorBackoff = 3 * time.Second
	// failoverBackoff paces pulls while a group elects a leader.
	failoverBackoff = 100 * time.Millisecond
	// flowControlWait bounds a wait for the process queue to drain, so a
	// drop is noticed.
	flowControlWait = 50 * time.Millisecond
	// lockWait is how long an orderly queue whose lock was lost waits
	// before it checks again.
	lockWait = 200 * time.Millisecond
)

// startQueue starts the pull loop of mq from offset, or from the stored
// (else the ConsumeFrom) offset when offset is negative. gm.mu is held.
func (gm *groupMember) startQueue(mq MessageQueue, offset int64, epoch uint64) *queueState {
	ctx, cancel := context.WithCancel(gm.runCtx)
	qs := &queueState{mq: mq, pq: newProcessQueue(max(offset, 0)), epoch: epoch, cancel: cancel, done: make(chan struct{}),
		serial: make(chan struct{}, 1)}
	gm.pulls.Add(1)
	go func() {
		defer gm.pulls.Done()
		defer close(qs.done)
		gm.runQueue(ctx, qs, offset)
	}()
	return qs
}

// runQueue is one queue's pull loop: long-poll PULL_MESSAGE, hand what it
// finds to deliver, pause while the process queue is full.
func (gm *groupMember) runQueue(ctx context.Context, qs *queueState, offset int64) {
	offset, ok := gm.startOffset(ctx, qs, offset)
	if !ok {
		return
	}
	node := 0
	refused := false // the last pull's subscription was refused
	for ctx.Err() == nil {
		if gm.pullable != nil && !gm.pullable(qs) {
			if sleepCtx(ctx, lockWait) != nil {
				return
			}
			continue
		}
		if qs.pq.full(gm.cfg) {
			waitChanged(ctx, qs.pq.changed, flowControlWait)
			continue
		}
		next, err := gm.pullOnce(ctx, qs, offset, &node)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if subscriptionRefused(err) {
				// Nothing comes until the subscription changes: say so,
				// once per run of refusals, and retry slowly.
				if !refused {
					gm.c.log.Error("the broker refused the subscription; retrying every "+pullErrorBackoff.String(),
						"queue", qs.mq.String(), "error", err)
				} else {
					gm.c.log.Debug("subscription refused again", "queue", qs.mq.String(), "error", err)
				}
				refused = true
			} else {
				gm.c.log.Debug("pull failed", "queue", qs.mq.String(), "error", err)
			}
			if sleepCtx(ctx, pullBackoff(err)) != nil {
				return
			}
			continue
		}
		refused = false
		offset = next
	}
}

// startOffset returns offset or, when it is negative, where qs starts
// (initialOffset), asking again after failures; false once ctx is done.
func (gm *groupMember) startOffset(ctx context.Context, qs *queueState, offset int64) (int64, bool) {
	for offset < 0 {
		off, err := gm.initialOffset(ctx, qs.mq)
		if err == nil {
			qs.pq.setNext(off)
			return off, true
		}
		gm.c.log.Warn("queue start offset", "queue", qs.mq.String(), "error", err)
		if sleepCtx(ctx, pullBackoff(err)) != nil {
			return offset, false
		}
	}
	return offset, true
}

// subscriptionRefused reports whether a pull failed on its subscription:
// SUBSCRIPTION_PARSE_FAILED (a bad SQL92 condition), or a broker that
// does not evaluate SQL92 (SYSTEM_ERROR naming the property filter).
func subscriptionRefused(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code == remoting.ResSubscriptionParseFailed ||
		e.Code == remoting.ResSystemError && strings.Contains(e.Remark, "enablePropertyFilter")
}

// pullBackoff is how long a queue waits after a failed pull or offset
// lookup: briefly while its group fails over, else pullErrorBackoff.
func pullBackoff(err error) time.Duration {
	if isFailover(err) || errors.Is(err, errMovedByFollower) {
		return failoverBackoff
	}
	return pullErrorBackoff
}

// pullOnce pulls mq from offset once and returns the next offset. It asks
// the node the last answer suggested (follower reads) while the route
// lists it; otherwise node picks the address (leader first), moving on
// after a failover error. A failed pull at a suggested node goes back to
// the leader.
func (gm *groupMember) pullOnce(ctx context.Context, qs *queueState, offset int64, node *int) (int64, error) {
	addrs, err := gm.leaderAddrs(ctx, qs.mq)
	if err != nil {
		return offset, err
	}
	addr := addrs[*node%len(addrs)]
	suggested := gm.suggestedAddr(ctx, qs.mq, qs.suggest.Load())
	if suggested != "" {
		addr = suggested
	}
	pctx, cancel := context.WithTimeout(ctx, gm.cfg.suspend+gm.cfg.requestTimeout+5*time.Second)
	defer cancel()
	sent := time.Now()
	resp, err := gm.c.invokeHeld(pctx, addr, gm.pullRequest(qs, offset))
	if err == nil {
		gm.stats.pullAnswered(qs.mq.Topic, time.Since(sent))
	}
	qs.suggest.Store(0)
	if err != nil {
		if suggested != "" {
			*node = 0
		} else {
			*node++
		}
		_, _ = gm.c.routes.refresh(ctx, qs.mq.Topic)
		return offset, err
	}
	if resp.Code == remoting.ResSuccess || resp.Code == remoting.ResPullNotFound ||
		resp.Code == remoting.ResPullRetryImmediately || resp.Code == remoting.ResPullOffsetMoved {
		if id, err := strconv.ParseInt(resp.ExtFields["suggestWhichBrokerId"], 10, 64); err == nil && id > 0 {
			qs.suggest.Store(id)
		}
	}
	next, perr := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
	switch resp.Code {
	case remoting.ResSuccess:
		if perr != nil {
			return offset, fmt.Errorf("client: pull %s: bad nextBeginOffset", qs.mq)
		}
		return next, gm.found(ctx, qs, resp, next)
	case remoting.ResPullNotFound, remoting.ResPullRetryImmediately, remoting.ResPullOffsetMoved:
		if perr != nil {
			return offset, fmt.Errorf("client: pull %s: bad nextBeginOffset", qs.mq)
		}
		return gm.foundNothing(ctx, qs, resp.Code, offset, next, addr, node)
	}
	err = &Error{Code: resp.Code, Remark: resp.Remark, Request: remoting.ReqPullMessage, Addr: addr}
	failover := isFailover(err)
	switch {
	case suggested != "":
		*node = 0
	case failover:
		*node++
	}
	if failover {
		_, _ = gm.c.routes.refresh(ctx, qs.mq.Topic)
	}
	return offset, err
}

// suggestedAddr is the address of brokerId id in mq's route: where a
// pull answer suggested the queue's next pull. "" for the leader (0), or
// when the route lacks id (a follower gone, a stale suggestion).
func (gm *groupMember) suggestedAddr(ctx context.Context, mq MessageQueue, id int64) string {
	if id <= 0 {
		return ""
	}
	r, err := gm.c.routes.get(ctx, mq.Topic)
	if err != nil {
		return ""
	}
	bd, _ := r.Broker(mq.BrokerName)
	return bd.BrokerAddrs[id]
}

// foundNothing takes a pull's answer without messages (code): the queue
// goes on at next, unless a node other than the leader moved it back.
func (gm *groupMember) foundNothing(ctx context.Context, qs *queueState, code int16, offset, next int64, addr string, node *int) (int64, error) {
	if code == remoting.ResPullOffsetMoved && next < offset && !gm.isLeader(ctx, qs.mq, addr) {
		// A node that is not (or no longer) the leader may lag, and
		// a lagging node moves us back, to 0 even: ask the leader.
		*node = 0
		qs.suggest.Store(0)
		return offset, fmt.Errorf("%w: %s at %s", errMovedByFollower, qs.mq, addr)
	}
	if code == remoting.ResPullOffsetMoved {
		gm.c.log.Warn("pull offset moved", "queue", qs.mq.String(), "from", offset, "to", next)
		qs.pq.setNext(next)
	} else {
		qs.pq.add(nil, next)
	}
	return next, nil
}

// errMovedByFollower: a node other than the leader answered
// PULL_OFFSET_MOVED backwards; the pull is retried at the leader.
var errMovedByFollower = errors.New("client: offset moved back by a non-leader")

// isLeader reports whether addr is the leader of mq's group in the
// freshly refreshed route.
func (gm *groupMember) isLeader(ctx context.Context, mq MessageQueue, addr string) bool {
	r, err := gm.c.routes.refresh(ctx, mq.Topic)
	if err != nil {
		return false
	}
	bd, ok := r.Broker(mq.BrokerName)
	return ok && bd.BrokerAddrs[0] == addr
}

// found decodes a pull's messages, drops those the subscription does not
// want (the broker filters by tag hash only), caches the rest in the
// process queue and delivers them.
func (gm *groupMember) found(ctx context.Context, qs *queueState, resp *remoting.Command, next int64) error {
	msgs, err := message.DecodeExtOpts{Decompress: true}.DecodeExts(resp.Body)
	if err != nil {
		return fmt.Errorf("client: pull %s: %w", qs.mq, err)
	}
	gm.mu.Lock()
	sub := gm.subs[qs.mq.Topic]
	gm.mu.Unlock()
	kept := msgs[:0]
	for _, m := range msgs {
		m.SetProperty(message.PropertyMinOffset, resp.ExtFields["minOffset"])
		m.SetProperty(message.PropertyMaxOffset, resp.ExtFields["maxOffset"])
		if sub == nil || sub.matches(m) {
			kept = append(kept, m)
		}
	}
	qs.pq.add(kept, next)
	gm.stats.pulledMsgs(qs.mq.Topic, len(kept))
	if len(kept) > 0 {
		gm.deliver(ctx, qs, kept)
	}
	return nil
}

// pullRequest builds PULL_MESSAGE: long polling, the subscription, and, for
// a clustering push consumer, the offset to commit.
func (gm *groupMember) pullRequest(qs *queueState, offset int64) *remoting.Command {
	gm.mu.Lock()
	sub := gm.subs[qs.mq.Topic]
	gm.mu.Unlock()
	expr, typ, version := protocol.SubAll, protocol.ExprTag, int64(0)
	if sub != nil {
		expr, typ, version = sub.expr, sub.typ, sub.version
	}
	flag := int32(protocol.PullFlagSuspend | protocol.PullFlagSubscription)
	commit := int64(0)
	if gm.cfg.model == Clustering && !gm.active {
		if commit = qs.pq.commitOffset(); commit > 0 {
			flag |= protocol.PullFlagCommitOffset
		}
	}
	h := protocol.PullMessageHeader{
		ConsumerGroup: gm.cfg.group, Topic: qs.mq.Topic, QueueID: qs.mq.QueueID, QueueOffset: offset,
		MaxMsgNums: int32(gm.cfg.pullBatch), SysFlag: flag, CommitOffset: commit,
		SuspendTimeoutMillis: gm.cfg.suspend.Milliseconds(), Subscription: expr, SubVersion: version,
		ExpressionType: typ, BrokerName: qs.mq.BrokerName,
	}
	return remoting.NewRequest(remoting.ReqPullMessage, h.Ext(), nil)
}

// initialOffset is where a newly assigned queue starts: the stored
// offset, else ConsumeFrom (RocketMQ's computePullFromWhere).
func (gm *groupMember) initialOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	off, ok, err := gm.store.read(ctx, mq)
	if err != nil || ok {
		return off, err
	}
	return gm.offsetFromWhere(ctx, mq, gm.cfg.from)
}

// offsetFromWhere resolves from on mq: last → GET_MAX_OFFSET (0 for a
// retry topic), first → 0 (a moved offset is corrected by the broker's
// OFFSET_MOVED answer), timestamp → SEARCH_OFFSET_BY_TIMESTAMP.
func (gm *groupMember) offsetFromWhere(ctx context.Context, mq MessageQueue, from ConsumeFrom) (int64, error) {
	_, retry := protocol.RetryGroup(mq.Topic)
	switch from.String() {
	case ConsumeFromFirst().where:
		return 0, nil
	case ConsumeFromTimestamp(time.Time{}).where:
		if retry {
			return gm.queueOffset(ctx, mq, remoting.ReqGetMaxOffset, nil)
		}
		return gm.searchOffset(ctx, mq, from.at)
	}
	if retry {
		return 0, nil
	}
	return gm.queueOffset(ctx, mq, remoting.ReqGetMaxOffset, nil)
}

// searchOffset is SEARCH_OFFSET_BY_TIMESTAMP: the first offset stored at or
// after t.
func (gm *groupMember) searchOffset(ctx context.Context, mq MessageQueue, t time.Time) (int64, error) {
	return gm.queueOffset(ctx, mq, remoting.ReqSearchOffsetByTimestamp,
		map[string]string{"timestamp": strconv.FormatInt(t.UnixMilli(), 10)})
}

// queueOffset asks mq's leader an offset question (GET_MAX_OFFSET,
// SEARCH_OFFSET_BY_TIMESTAMP) answered in ext "offset".
func (gm *groupMember) queueOffset(ctx context.Context, mq MessageQueue, code int16, extra map[string]string) (int64, error) {
	ext := protocol.QueueHeader{Topic: mq.Topic, QueueID: mq.QueueID}.Ext()
	for k, v := range extra {
		ext[k] = v
	}
	resp, err := gm.callLeader(ctx, mq, remoting.NewRequest(code, ext, nil))
	if err != nil {
		return 0, err
	}
	off, err := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("client: %s of %s: bad offset %q", remoting.CodeName(code), mq, resp.ExtFields["offset"])
	}
	return off, nil
}

// waitChanged waits for a signal on ch, at most d, or until ctx is done.
func waitChanged(ctx context.Context, ch <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}
