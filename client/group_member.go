package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// consumerBase is what push and pull consumers share: subscriptions, the
// rebalance, one pull loop per assigned queue and the offset store. The
// kind supplies deliver, which takes the messages each pull found.
type consumerBase struct {
	cfg     *settings
	cs      consumerSettings
	c       *core
	store   offsetStore
	active  bool // pull consumer: CONSUME_ACTIVELY, explicit commits
	deliver func(ctx context.Context, qs *queueState, msgs []*message.MessageExt) bool
	// Orderly hooks (nil otherwise): lock newly assigned queues before
	// they are pulled, let released ones go after their last commit.
	lockNew    func(ctx context.Context, mqs []MessageQueue) []MessageQueue
	unlockGone func(ctx context.Context, gone []*queueState)
	// pullable gates each pull (orderly: only while the queue is locked).
	pullable func(qs *queueState) bool

	mu       sync.Mutex
	subs     map[string]*subscription // topic → subscription
	queues   map[MessageQueue]*queueState
	fixed    bool           // Assign: no rebalance
	pending  []MessageQueue // Assign: queues to start at Start
	started  bool
	closed   bool
	kick     chan struct{} // rebalance now
	stop     chan struct{}
	loops    sync.WaitGroup // rebalance and commit loops
	pulls    sync.WaitGroup // pull loops
	runCtx   context.Context
	runStop  context.CancelFunc
	lastSeen map[string][]string // topic → consumer ids of the last rebalance
}

// queueState is one assigned queue: its process queue and pull loop.
type queueState struct {
	mq     MessageQueue
	pq     *processQueue
	epoch  uint64
	cancel context.CancelFunc
	done   chan struct{}
	// Orderly consumption: the broker lock (lockedAt is UnixNano of the
	// last grant, 0 while not held) and the token one worker at a time
	// holds to consume the queue.
	lockedAt atomic.Int64
	serial   chan struct{}
}

func newConsumerBase(group string, opts []Option, active bool, name string) (*consumerBase, error) {
	cfg, cs, err := newConsumerSettings(group, opts)
	if err != nil {
		return nil, err
	}
	c, err := newCore(cfg, name)
	if err != nil {
		return nil, err
	}
	b := &consumerBase{cfg: cfg, cs: cs, c: c, active: active, subs: map[string]*subscription{},
		queues: map[MessageQueue]*queueState{}, kick: make(chan struct{}, 1), stop: make(chan struct{}),
		lastSeen: map[string][]string{}}
	b.runCtx, b.runStop = context.WithCancel(context.Background())
	if cs.model == Broadcasting {
		b.store = newLocalOffsetStore(cs.offsetDir, group)
	} else {
		b.store = newRemoteOffsetStore(b)
	}
	c.addHeartbeatSource(b.heartbeatData)
	c.handle(remoting.ReqNotifyConsumerIDsChanged, func(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
		b.triggerRebalance()
		return nil
	})
	return b, nil
}

// heartbeatData announces the group and its subscriptions.
func (b *consumerBase) heartbeatData(hb *heartbeatData) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cd := consumerData{GroupName: b.cfg.group, ConsumeType: "CONSUME_PASSIVELY", MessageModel: b.cs.model.String(),
		ConsumeFromWhere: b.cs.from.String(), SubscriptionDataSet: []subscriptionData{}}
	if b.active {
		cd.ConsumeType = "CONSUME_ACTIVELY"
	}
	for _, t := range slices.Sorted(maps.Keys(b.subs)) {
		cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, b.subs[t].data())
	}
	hb.ConsumerDataSet = append(hb.ConsumerDataSet, cd)
}

// subscribe adds a subscription; before start only.
func (b *consumerBase) subscribe(topic, expr string, h MessageHandler) error {
	s, err := parseSubscription(topic, expr)
	if err != nil {
		return err
	}
	s.handler = h
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return ErrStarted
	}
	b.subs[topic] = s
	if b.cs.model == Clustering && !b.active {
		// Messages sent back for retry come from %RETRY%group, which
		// every clustering push consumer subscribes as RocketMQ's do.
		rt := RetryTopic(b.cfg.group)
		if _, ok := b.subs[rt]; !ok {
			r, _ := parseSubscription(rt, "*")
			b.subs[rt] = r
		}
	}
	return nil
}

// start fetches the routes, heartbeats every node, rebalances and runs the
// periodic loops. A subscribed topic without a route fails it (ErrNoRoute),
// except the retry topic, which a broker creates on the first heartbeat.
func (b *consumerBase) start(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	if b.started {
		b.mu.Unlock()
		return nil
	}
	if len(b.subs) == 0 && len(b.queues) == 0 && !b.fixed {
		b.mu.Unlock()
		return ErrNoSubscription
	}
	b.started = true
	topics := slices.Sorted(maps.Keys(b.subs))
	b.mu.Unlock()
	for _, t := range topics {
		if t == RetryTopic(b.cfg.group) {
			continue
		}
		if _, err := b.c.routes.get(ctx, t); err != nil {
			return err
		}
	}
	if err := b.c.start(); err != nil {
		return err
	}
	b.c.heartbeatAll(ctx)
	b.startPending()
	b.rebalance(ctx)
	b.runLoops()
	return nil
}

// runLoops starts the rebalance loop (every interval and when kicked) and,
// unless commits are explicit, the commit loop.
func (b *consumerBase) runLoops() {
	b.loops.Add(1)
	go func() {
		defer b.loops.Done()
		t := time.NewTicker(b.cs.rebalanceEvery)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
			case <-b.kick:
			}
			ctx, cancel := context.WithTimeout(b.runCtx, 2*b.cfg.requestTimeout)
			b.rebalance(ctx)
			cancel()
		}
	}()
	if b.active {
		return
	}
	b.loops.Add(1)
	go func() {
		defer b.loops.Done()
		t := time.NewTicker(b.cs.commitEvery)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(b.runCtx, b.cfg.requestTimeout)
				if err := b.commit(ctx, nil); err != nil {
					b.c.log.Warn("commit offsets", "error", err)
				}
				cancel()
			}
		}
	}()
}

// startPending starts the pull loops of assigned queues.
func (b *consumerBase) startPending() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, mq := range b.pending {
		if _, ok := b.queues[mq]; !ok {
			b.queues[mq] = b.startQueue(mq, -1, 0)
		}
	}
	b.pending = nil
}

func (b *consumerBase) triggerRebalance() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// commit persists the commit offset of qs's queues (nil: every assigned
// queue).
func (b *consumerBase) commit(ctx context.Context, only []*queueState) error {
	if only == nil {
		b.mu.Lock()
		only = slices.Collect(maps.Values(b.queues))
		b.mu.Unlock()
	}
	offs := map[MessageQueue]int64{}
	for _, qs := range only {
		offs[qs.mq] = qs.pq.commitOffset()
	}
	if len(offs) == 0 {
		return nil
	}
	return b.store.persist(ctx, offs)
}

// shutdown stops the loops and every pull loop, runs finish (the kind's
// draining), commits unless commits are explicit, and closes the core.
func (b *consumerBase) shutdown(ctx context.Context, finish func(context.Context)) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	started := b.started
	close(b.stop)
	queues := slices.Collect(maps.Values(b.queues))
	b.mu.Unlock()
	b.loops.Wait()
	for _, qs := range queues {
		qs.cancel()
	}
	b.pulls.Wait()
	if finish != nil {
		finish(ctx)
	}
	var err error
	if started && !b.active {
		err = b.commit(ctx, queues)
	}
	if started && b.unlockGone != nil {
		b.unlockGone(ctx, queues)
	}
	b.runStop()
	b.c.close()
	return err
}

// assignment returns the queues currently assigned, sorted.
func (b *consumerBase) assignment() []MessageQueue {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.SortedFunc(maps.Keys(b.queues), compareQueues)
}

// leaderAddrs returns mq's broker group addresses, the leader first.
func (b *consumerBase) leaderAddrs(ctx context.Context, mq MessageQueue) ([]string, error) {
	r, err := b.c.routes.get(ctx, mq.Topic)
	if err == nil {
		if bd, ok := r.Broker(mq.BrokerName); ok {
			if addrs := brokerAddrs(bd); len(addrs) > 0 {
				return addrs, nil
			}
		}
	}
	if bd, ok := b.c.routes.brokerGroup(mq.BrokerName); ok {
		if addrs := brokerAddrs(bd); len(addrs) > 0 {
			return addrs, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: %s", ErrBrokerNotFound, mq.BrokerName)
}

// callLeader sends req to the leader of mq's group. On a failover error
// it refreshes the route at once and tries the new leader (or, while the
// route has not changed, the other nodes, which forward to theirs).
func (b *consumerBase) callLeader(ctx context.Context, mq MessageQueue, req *remoting.Command) (*remoting.Command, error) {
	addrs, err := b.leaderAddrs(ctx, mq)
	if err != nil {
		return nil, err
	}
	var errs []error
	i := 0
	for attempt := 0; attempt < 4; attempt++ {
		resp, err := b.c.call(ctx, addrs[i%len(addrs)], req)
		if err == nil || !isFailover(err) || ctx.Err() != nil {
			return resp, err
		}
		errs = append(errs, err)
		i++
		if r, rerr := b.c.routes.refresh(ctx, mq.Topic); rerr == nil {
			if bd, ok := r.Broker(mq.BrokerName); ok && len(brokerAddrs(bd)) > 0 {
				if fresh := brokerAddrs(bd); fresh[0] != addrs[0] {
					addrs, i = fresh, 0 // a new leader: go there first
				}
			}
		}
	}
	return nil, errors.Join(errs...)
}
