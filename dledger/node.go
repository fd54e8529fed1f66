package dledger

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// LeaderEvent reports that this node observed a leader change.
type LeaderEvent struct {
	// LeaderID and LeaderAddr are empty when the node lost its leader.
	LeaderID   string
	LeaderAddr string
	// IsLeader is true when this node is the new leader.
	IsLeader bool
	Term     uint64
}

// Node is one member of a broker group: a raft instance, its FSM, and the
// leader-side proposal pipeline.
type Node struct {
	cfg  Config
	log  hclog.Logger
	raft *raft.Raft
	// raftRef is raft for the commitlog's DeferSync, which raft's own
	// goroutines call, possibly before New has set n.raft.
	raftRef atomic.Pointer[raft.Raft]
	fsm     *fsm
	trans   raft.Transport
	prop    *proposer
	// progress is what the leader knows of each follower's log.
	progress *progressTransport
	// hb carries heartbeats (heartbeat.go); nil with Config.Transport.
	hb *netTransport

	stable  raft.StableStore
	logs    raft.LogStore
	snaps   raft.SnapshotStore
	closers []func() error

	// durableLog is the log when it is a DeferredSyncLog in use for
	// parallel leader writes (leaderwrite.go), else nil.
	durableLog DeferredSyncLog
	// acker answers puts early (earlyack.go); nil without durableLog or
	// on a transport other than netTransport.
	acker *earlyAcker

	obsCh    chan raft.Observation
	observer *raft.Observer

	mu        sync.Mutex
	err       error // why the node stopped itself
	closed    bool
	subs      map[chan LeaderEvent]struct{}
	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup
}

// New opens the stores, starts raft, and bootstraps the group from
// cfg.Peers when the node has no raft state yet.
func New(cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: os.Stderr})
	}
	cfg.Logger = cfg.Logger.Named("dledger")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger, done: make(chan struct{}), subs: map[chan LeaderEvent]struct{}{}}
	if err := n.open(); err != nil {
		n.closeStores()
		return nil, err
	}
	return n, nil
}

func (n *Node) open() error {
	cfg := &n.cfg
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return fmt.Errorf("dledger: data dir: %w", err)
		}
	}
	stable, snaps, err := n.openStores()
	if err != nil {
		return err
	}
	n.logs = cfg.LogStore
	if err := n.openTransport(); err != nil {
		return err
	}
	n.fsm = &fsm{st: newCounters(), logs: cfg.LogStore, dispatch: cfg.Dispatcher, sm: cfg.StateMachine, log: n.log, onFatal: n.stopDiverged}
	if fl, ok := n.logs.(FlooredLog); ok {
		fl.SetRetentionFloor(n.snapshotFloor)
	}
	trans := n.trans
	if dl, ok := n.logs.(DeferredSyncLog); ok && !cfg.SerialLeaderWrite {
		dl.SetDeferSync(n.deferLeaderSync)
		n.durableLog = dl
		n.fsm.durable = n.waitDurable
		trans = newClampTransport(n.trans, dl.DurableIndex)
	}
	if rl, ok := n.logs.(RecoveringLog); ok {
		var g *voteGuard
		full := func() bool { return false }
		if sl, ok := n.logs.(SpaceRefusingLog); ok {
			full = func() bool { return sl.SpaceRefusal() != nil }
		}
		trans, g = newVoteGuard(trans, func() bool { return rl.RecoveringThrough() != 0 }, full, cfg.NodeID, n.log)
		n.closers = append(n.closers, g.stopPump)
		if x := rl.RecoveringThrough(); x != 0 {
			n.log.Warn("log recovering from corruption: no votes until it holds the entries it had", "through", x)
		}
	}
	var hb raft.Transport // a nil *netTransport must stay a nil interface
	if n.hb != nil {
		hb = n.hb
	}
	trans, n.progress = newProgressTransport(trans, hb, n.retryPointless)
	if nt, ok := n.trans.(*netTransport); ok && n.durableLog != nil && !cfg.NoEarlyAck {
		n.acker = newEarlyAcker(n)
		nt.onAppended = n.acker.onAppended
	}
	rc := cfg.raftConfig()
	if err := n.bootstrap(rc, stable, snaps); err != nil {
		return err
	}
	// The leader replicates entries it has just written: a small cache of
	// the newest entries saves re-reading (and re-checking) them from the
	// commitlog for every follower.
	logs, err := raft.NewLogCache(logCacheEntries, n.logs)
	if err != nil {
		return fmt.Errorf("dledger: log cache: %w", err)
	}
	r, err := raft.NewRaft(rc, n.fsm, logs, stable, snaps, trans)
	if err != nil {
		return fmt.Errorf("dledger: start raft: %w", err)
	}
	n.raft = r
	n.raftRef.Store(r)
	n.prop = newProposer(n)
	n.startObserver()
	n.log.Info("node started", "id", cfg.NodeID, "addr", n.trans.LocalAddr())
	return nil
}

// logCacheEntries is how many of the newest raft entries the leader keeps
// in memory for replication; entries are group commits of up to
// MaxBatchBytes, typically tens of KiB.
const logCacheEntries = 128

func (n *Node) openStores() (raft.StableStore, raft.SnapshotStore, error) {
	cfg := &n.cfg
	stable := cfg.StableStore
	if stable == nil {
		bs, err := raftboltdb.NewBoltStore(filepath.Join(cfg.DataDir, "raft-stable.db"))
		if err != nil {
			return nil, nil, fmt.Errorf("dledger: stable store: %w", err)
		}
		n.closers = append(n.closers, bs.Close)
		stable = bs
	}
	n.stable = stable
	snaps := cfg.SnapshotStore
	if snaps == nil {
		fs, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, cfg.SnapshotRetain, n.log)
		if err != nil {
			return nil, nil, fmt.Errorf("dledger: snapshot store: %w", err)
		}
		snaps = fs
	}
	if hl, ok := cfg.LogStore.(HistoryLog); ok {
		snaps = &historySnapshots{SnapshotStore: snaps, log: hl}
	}
	n.snaps = snaps
	return stable, snaps, nil
}

// snapshotFloor is the log's retention floor (FlooredLog): the newest
// snapshot's index. Entries above it are what raft replays after a restart.
func (n *Node) snapshotFloor() uint64 {
	metas, err := n.snaps.List()
	if err != nil || len(metas) == 0 {
		return 0
	}
	return metas[0].Index
}

// LogStore returns the raft log store in use.
func (n *Node) LogStore() raft.LogStore { return n.logs }

func (n *Node) openTransport() error {
	cfg := &n.cfg
	if cfg.Transport != nil {
		n.trans = cfg.Transport
		return nil
	}
	var adv net.Addr
	if cfg.Advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", cfg.Advertise)
		if err != nil {
			return fmt.Errorf("dledger: advertise address: %w", err)
		}
		adv = a
	}
	if cfg.TLSServer != nil {
		sl, err := newTLSStreamLayer(cfg.RaftAddr, adv, cfg.TLSServer, cfg.TLSClient, n.log)
		if err != nil {
			return fmt.Errorf("dledger: raft TLS transport: %w", err)
		}
		n.trans = newNetTransport(sl, peerPool, rpcTimeout, n.log.Named("transport"))
		n.hb = newHeartbeatTransport(sl.Addr(), sl.Dial, cfg.HeartbeatTimeout, n.log)
		return nil
	}
	sl, err := newTCPStream(cfg.RaftAddr, adv)
	if err != nil {
		return fmt.Errorf("dledger: raft transport: %w", err)
	}
	n.trans = newNetTransport(sl, peerPool, rpcTimeout, n.log.Named("transport"))
	n.hb = newHeartbeatTransport(sl.Addr(), tcpDial, cfg.HeartbeatTimeout, n.log)
	return nil
}

// peerPool is how many idle connections a node keeps to each peer, and
// rpcTimeout the I/O deadline of one raft RPC (raft's defaults).
const (
	peerPool   = 3
	rpcTimeout = 10 * time.Second
)

func (n *Node) bootstrap(rc *raft.Config, stable raft.StableStore, snaps raft.SnapshotStore) error {
	if len(n.cfg.Peers) == 0 {
		return nil
	}
	has, err := raft.HasExistingState(n.logs, stable, snaps)
	if err != nil || has {
		return err
	}
	var conf raft.Configuration
	for _, p := range n.cfg.Peers {
		addr := p.Addr
		if p.ID == n.cfg.NodeID {
			// The bound port may have been :0; what others dial is what the
			// transport reports.
			addr = string(n.trans.LocalAddr())
		}
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(addr)})
	}
	n.log.Info("bootstrapping group", "servers", len(conf.Servers))
	return raft.BootstrapCluster(rc, n.logs, stable, snaps, n.trans, conf)
}

// startObserver forwards raft's leader observations to the proposer (a new
// leader term needs a barrier) and to subscribers.
func (n *Node) startObserver() {
	n.obsCh = make(chan raft.Observation, 16)
	n.observer = raft.NewObserver(n.obsCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(n.observer)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			select {
			case o := <-n.obsCh:
				lo := o.Data.(raft.LeaderObservation)
				ev := LeaderEvent{LeaderID: string(lo.LeaderID), LeaderAddr: string(lo.LeaderAddr),
					IsLeader: lo.LeaderID == raft.ServerID(n.cfg.NodeID), Term: n.raft.CurrentTerm()}
				n.prop.kick()
				n.publish(ev)
			case <-n.done:
				return
			}
		}
	}()
}

func (n *Node) publish(ev LeaderEvent) {
	n.log.Info("leader changed", "leader", ev.LeaderID, "addr", ev.LeaderAddr, "self", ev.IsLeader, "term", ev.Term)
	if n.cfg.OnLeaderChange != nil {
		n.cfg.OnLeaderChange(ev)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs {
		select { // latest wins: drop the stale event a slow reader has not taken
		case <-ch:
		default:
		}
		ch <- ev
	}
}

// SubscribeLeader returns a channel that holds the latest LeaderEvent
// (older unread events are replaced) and a function to unsubscribe.
func (n *Node) SubscribeLeader() (<-chan LeaderEvent, func()) {
	ch := make(chan LeaderEvent, 1)
	n.mu.Lock()
	n.subs[ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.subs, ch)
		n.mu.Unlock()
	}
}

// stopDiverged stops the node after the FSM found divergence.
func (n *Node) stopDiverged(err error) {
	n.mu.Lock()
	if n.err == nil {
		n.err = err
	}
	n.mu.Unlock()
	_ = n.Close()
}

// Err returns why the node stopped itself (ErrDivergence), or nil.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// Done is closed when the node has been closed or stopped itself.
func (n *Node) Done() <-chan struct{} { return n.done }

// Close stops raft and the proposer and closes the stores the node opened.
// Pending proposals fail. Close is idempotent.
func (n *Node) Close() error {
	var err error
	n.closeOnce.Do(func() {
		n.mu.Lock()
		n.closed = true
		n.mu.Unlock()
		close(n.done)
		// The proposer stops first, while raft still runs: raft answers
		// every future it accepted as long as it runs (committed, or
		// ErrLeadershipLost when the leader steps down), but a future still
		// queued inside raft at Shutdown is never answered, and waiting on
		// it would hang Close for good.
		stopped := n.prop == nil || n.prop.waitFor(10*time.Second)
		if n.raft != nil {
			n.raft.DeregisterObserver(n.observer)
			err = n.raft.Shutdown().Error()
		}
		if !stopped && !n.prop.waitFor(5*time.Second) {
			n.log.Error("proposer did not stop: a raft future was never answered; closing anyway")
		}
		if n.acker != nil {
			n.acker.close()
		}
		n.wg.Wait()
		err = errors.Join(err, n.closeStores())
		n.log.Info("node closed", "id", n.cfg.NodeID)
	})
	return err
}

func (n *Node) closeStores() error {
	var errs []error
	if nt, ok := n.trans.(*raft.NetworkTransport); ok {
		// Close leaves pooled outbound connections open, and the peers'
		// handlers of them blocked in Read; release them explicitly.
		nt.CloseStreams()
	}
	if c, ok := n.trans.(raft.WithClose); ok {
		errs = append(errs, c.Close())
	}
	if n.hb != nil {
		errs = append(errs, n.hb.Close())
	}
	for _, c := range n.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// retryPointless reports that the node is closing or does not lead: its
// replication calls need not be retried.
func (n *Node) retryPointless() bool {
	select {
	case <-n.done:
		return true
	default:
	}
	r := n.raftRef.Load()
	return r == nil || r.State() != raft.Leader
}

// ID returns the node's raft server ID.
func (n *Node) ID() string { return n.cfg.NodeID }

// Addr returns the address other nodes reach this node's raft at.
func (n *Node) Addr() string { return string(n.trans.LocalAddr()) }

// Raft exposes the raft instance for stats and tests. Do not Apply or
// transfer leadership through it: the proposer's offset counters rely on
// every command and transfer going through Node.
func (n *Node) Raft() *raft.Raft { return n.raft }

// IsLeader reports whether this node is currently the raft leader.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader returns the leader this node knows of; empty if none.
func (n *Node) Leader() (addr, id string) {
	a, i := n.raft.LeaderWithID()
	return string(a), string(i)
}

func (n *Node) notLeader() *NotLeaderError {
	addr, id := n.Leader()
	if id == n.cfg.NodeID {
		addr, id = "", ""
	}
	return &NotLeaderError{LeaderAddr: addr, LeaderID: id}
}

// SnapshotNow takes a snapshot now (tests).
func (n *Node) SnapshotNow() error { return n.raft.Snapshot().Error() }

// Snapshot takes a snapshot of this node now and returns the raft index
// and term it covers; fresh is false (and the index the node's last
// applied) when nothing was applied since the newest snapshot.
func (n *Node) Snapshot() (index, term uint64, fresh bool, err error) {
	f := n.raft.Snapshot()
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNothingNewToSnapshot) {
			return n.raft.AppliedIndex(), 0, false, nil
		}
		return 0, 0, false, err
	}
	meta, rc, err := f.Open()
	if err != nil {
		return 0, 0, false, err
	}
	rc.Close()
	return meta.Index, meta.Term, true, nil
}
