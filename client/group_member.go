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
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// groupMember is this process's membership of a consumer group, the
// machinery push and pull consumers share: subscriptions, the rebalance,
// one pull loop per assigned queue and the offset store. The consumer
// kind supplies deliver, which takes the messages each pull found.
type groupMember struct {
	cfg    *consumerConfig
	c      *core
	store  offsetStore
	active bool // pull consumer: CONSUME_ACTIVELY, explicit commits
	// commitEvery is how often offsets are committed (push consumer); 0
	// when commits are explicit.
	commitEvery time.Duration
	deliver     func(ctx context.Context, qs *queueState, msgs []*message.MessageExt) bool
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
	// Running info: counters, and the push consumer's mode and workers.
	stats   *consumeStats
	orderly bool
	workers int
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
	// suggest is the brokerId the queue's last pull answer suggested
	// (suggestWhichBrokerId): its pull loop pulls from that node while the
	// route lists it, else from the leader. Only the loop writes it.
	suggest atomic.Int64
}

// newGroupMember returns the membership of cfg's group, named name in
// logs; active for a pull consumer. It does no I/O.
func newGroupMember(cfg *consumerConfig, active bool, name string) (*groupMember, error) {
	c, err := newCore(&cfg.config, name)
	if err != nil {
		return nil, err
	}
	gm := &groupMember{cfg: cfg, c: c, active: active, subs: map[string]*subscription{},
		queues: map[MessageQueue]*queueState{}, kick: make(chan struct{}, 1), stop: make(chan struct{}),
		lastSeen: map[string][]string{}, stats: newConsumeStats()}
	gm.runCtx, gm.runStop = context.WithCancel(context.Background())
	if cfg.model == Broadcasting {
		gm.store = newLocalOffsetStore(cfg.offsetDir, cfg.group)
	} else {
		gm.store = newRemoteOffsetStore(gm)
	}
	c.addHeartbeatSource(gm.heartbeatData)
	c.handle(remoting.ReqNotifyConsumerIDsChanged, func(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
		gm.triggerRebalance()
		return nil
	})
	c.handle(remoting.ReqResetConsumerClientOffset, gm.onResetOffset)
	c.handle(remoting.ReqGetConsumerRunningInfo, gm.onRunningInfo)
	return gm, nil
}

// heartbeatData announces the group and its subscriptions.
func (gm *groupMember) heartbeatData(hb *protocol.HeartbeatData) {
	gm.mu.Lock()
	defer gm.mu.Unlock()
	cd := protocol.ConsumerData{GroupName: gm.cfg.group, ConsumeType: protocol.ConsumePassively,
		MessageModel: gm.cfg.model.String(), ConsumeFromWhere: gm.cfg.from.String(),
		SubscriptionDataSet: []protocol.SubscriptionData{}}
	if gm.active {
		cd.ConsumeType = protocol.ConsumeActively
	}
	for _, t := range slices.Sorted(maps.Keys(gm.subs)) {
		cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, gm.subs[t].data())
	}
	hb.ConsumerDataSet = append(hb.ConsumerDataSet, cd)
}

// subscribe adds a subscription; before start only.
func (gm *groupMember) subscribe(topic string, sel MessageSelector, h MessageHandler) error {
	s, err := parseSelector(topic, sel)
	if err != nil {
		return err
	}
	s.handler = h
	gm.mu.Lock()
	defer gm.mu.Unlock()
	if gm.started {
		return ErrStarted
	}
	gm.subs[topic] = s
	if gm.cfg.model == Clustering && !gm.active {
		// Messages sent back for retry come from %RETRY%group, which
		// every clustering push consumer subscribes as RocketMQ's do.
		rt := protocol.RetryTopic(gm.cfg.group)
		if _, ok := gm.subs[rt]; !ok {
			r, _ := parseSubscription(rt, protocol.SubAll)
			gm.subs[rt] = r
		}
	}
	return nil
}

// start fetches the routes, heartbeats every node, rebalances and runs the
// periodic loops. A subscribed topic without a route fails it (ErrNoRoute),
// except the retry topic, which a broker creates on the first heartbeat.
func (gm *groupMember) start(ctx context.Context) error {
	gm.mu.Lock()
	if gm.closed {
		gm.mu.Unlock()
		return ErrClosed
	}
	if gm.started {
		gm.mu.Unlock()
		return nil
	}
	if len(gm.subs) == 0 && len(gm.queues) == 0 && !gm.fixed {
		gm.mu.Unlock()
		return ErrNoSubscription
	}
	gm.started = true
	topics := slices.Sorted(maps.Keys(gm.subs))
	gm.mu.Unlock()
	for _, t := range topics {
		if t == protocol.RetryTopic(gm.cfg.group) {
			continue
		}
		if _, err := gm.c.routes.get(ctx, t); err != nil {
			return err
		}
	}
	if err := gm.c.start(); err != nil {
		return err
	}
	gm.c.heartbeatAll(ctx)
	gm.startPending()
	gm.rebalance(ctx)
	gm.runLoops()
	return nil
}

// runLoops starts the rebalance loop (every interval and when kicked) and,
// unless commits are explicit, the commit loop.
func (gm *groupMember) runLoops() {
	gm.runRebalanceLoop()
	if gm.commitEvery > 0 {
		gm.runCommitLoop()
	}
}

func (gm *groupMember) runRebalanceLoop() {
	gm.loops.Add(1)
	go func() {
		defer gm.loops.Done()
		t := time.NewTicker(gm.cfg.rebalanceEvery)
		defer t.Stop()
		for {
			select {
			case <-gm.stop:
				return
			case <-t.C:
			case <-gm.kick:
			}
			ctx, cancel := context.WithTimeout(gm.runCtx, 2*gm.cfg.requestTimeout)
			gm.rebalance(ctx)
			cancel()
		}
	}()
}

func (gm *groupMember) runCommitLoop() {
	gm.loops.Add(1)
	go func() {
		defer gm.loops.Done()
		t := time.NewTicker(gm.commitEvery)
		defer t.Stop()
		for {
			select {
			case <-gm.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(gm.runCtx, gm.cfg.requestTimeout)
				if err := gm.commit(ctx, nil); err != nil {
					gm.c.log.Warn("commit offsets", "error", err)
				}
				cancel()
			}
		}
	}()
}

// startPending starts the pull loops of assigned queues.
func (gm *groupMember) startPending() {
	gm.mu.Lock()
	defer gm.mu.Unlock()
	for _, mq := range gm.pending {
		if _, ok := gm.queues[mq]; !ok {
			gm.queues[mq] = gm.startQueue(mq, -1, 0)
		}
	}
	gm.pending = nil
}

func (gm *groupMember) triggerRebalance() {
	select {
	case gm.kick <- struct{}{}:
	default:
	}
}

// commit persists the commit offset of qs's queues (nil: every assigned
// queue).
func (gm *groupMember) commit(ctx context.Context, only []*queueState) error {
	if only == nil {
		gm.mu.Lock()
		only = slices.Collect(maps.Values(gm.queues))
		gm.mu.Unlock()
	}
	offs := map[MessageQueue]int64{}
	for _, qs := range only {
		offs[qs.mq] = qs.pq.commitOffset()
	}
	if len(offs) == 0 {
		return nil
	}
	return gm.store.persist(ctx, offs)
}

// shutdown stops the loops and every pull loop, runs finish (the kind's
// draining), commits unless commits are explicit, and closes the core.
func (gm *groupMember) shutdown(ctx context.Context, finish func(context.Context)) error {
	gm.mu.Lock()
	if gm.closed {
		gm.mu.Unlock()
		return nil
	}
	gm.closed = true
	started := gm.started
	close(gm.stop)
	queues := slices.Collect(maps.Values(gm.queues))
	gm.mu.Unlock()
	gm.loops.Wait()
	for _, qs := range queues {
		qs.cancel()
	}
	gm.pulls.Wait()
	if finish != nil {
		finish(ctx)
	}
	var err error
	if started && !gm.active {
		err = gm.commit(ctx, queues)
	}
	if started && gm.unlockGone != nil {
		gm.unlockGone(ctx, queues)
	}
	gm.runStop()
	gm.c.close()
	return err
}

// assignment returns the queues currently assigned, sorted.
func (gm *groupMember) assignment() []MessageQueue {
	gm.mu.Lock()
	defer gm.mu.Unlock()
	return slices.SortedFunc(maps.Keys(gm.queues), compareQueues)
}

// leaderAddrs returns mq's broker group addresses, the leader first.
func (gm *groupMember) leaderAddrs(ctx context.Context, mq MessageQueue) ([]string, error) {
	r, err := gm.c.routes.get(ctx, mq.Topic)
	if err == nil {
		if bd, ok := r.Broker(mq.BrokerName); ok {
			if addrs := brokerAddrs(bd); len(addrs) > 0 {
				return addrs, nil
			}
		}
	}
	if bd, ok := gm.c.routes.brokerGroup(mq.BrokerName); ok {
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
func (gm *groupMember) callLeader(ctx context.Context, mq MessageQueue, req *remoting.Command) (*remoting.Command, error) {
	addrs, err := gm.leaderAddrs(ctx, mq)
	if err != nil {
		return nil, err
	}
	var errs []error
	i := 0
	for attempt := 0; attempt < 4; attempt++ {
		resp, err := gm.c.call(ctx, addrs[i%len(addrs)], req)
		if err == nil || !isFailover(err) || ctx.Err() != nil {
			return resp, err
		}
		errs = append(errs, err)
		i++
		if r, rerr := gm.c.routes.refresh(ctx, mq.Topic); rerr == nil {
			if bd, ok := r.Broker(mq.BrokerName); ok && len(brokerAddrs(bd)) > 0 {
				if fresh := brokerAddrs(bd); fresh[0] != addrs[0] {
					addrs, i = fresh, 0 // a new leader: go there first
				}
			}
		}
	}
	return nil, errors.Join(errs...)
}
