package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

// Broker is one node of a broker group: the remoting server clients talk
// to, on top of a dledger node that replicates the store's commitlog and
// applies the group's metadata. It owns the node's parts and wires its
// services together; each service gets what it uses (see New).
type Broker struct {
	cfg  Config
	log  hclog.Logger
	self Peer

	store *store.Store
	meta  *meta.State
	nm    *nodeMetrics
	node  *dledger.Node
	rep   *replica

	rs     *remoting.Server
	client *remoting.Client // to the leader (forwarding) and name servers
	bg     *background

	reg       *registrar
	send      *sendService
	pull      *pullService
	offsets   *offsetCommitter
	clients   *clientService
	locks     *lockManager
	scheduled *scheduled
	timers    *timerScheduler
	leader    *leaderTerms
	runtime   *runtimeInfo
	acl       *aclService

	httpMu   sync.Mutex
	httpAddr net.Addr
	stopped  sync.Once
	shutting atomic.Bool // Shutdown began: a stopped node is not a failure
}

// New opens the node's store and metadata, starts its raft node and builds
// its services; Serve starts the client-facing listener.
func New(cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if err := checkLayout(cfg.DataDir); err != nil {
		return nil, err
	}
	self, _ := cfg.self()
	b := &Broker{cfg: cfg, log: log.Named("broker"), self: self, meta: meta.NewState(), bg: newBackground(),
		nm: newNodeMetrics(cfg.Cluster, self.ID)}
	sc := cfg.storeConfig()
	if sc.CommitLog.OnSync == nil {
		sc.CommitLog.OnSync = b.nm.fsync
	}
	st, err := store.Open(sc)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b.store = st
	if err := b.openRemoting(); err != nil {
		b.closeStore()
		return nil, err
	}
	b.reg = &registrar{meta: b.meta, cluster: cfg.Cluster, nameServers: cfg.NameServers, interval: cfg.RegisterInterval,
		log: b.log, kick: make(chan struct{}, 1)}
	if err := b.openNode(); err != nil {
		_ = b.client.Close()
		b.closeStore()
		return nil, err
	}
	if err := b.build(); err != nil {
		b.store.Halt()
		_ = b.node.Close()
		_ = b.client.Close()
		b.closeStore()
		return nil, err
	}
	return b, nil
}

func (b *Broker) openRemoting() error {
	rcfg := b.cfg.Remoting
	rcfg.Logger = b.log
	rs, err := remoting.NewServer(rcfg)
	if err != nil {
		return err
	}
	ccfg := remoting.DefaultClientConfig()
	ccfg.Logger = b.log
	ccfg.TLS = b.cfg.ClientTLS
	cl, err := remoting.NewClient(ccfg)
	if err != nil {
		return err
	}
	b.rs, b.client = rs, cl
	return nil
}

// entryHeadroom is what a raft entry needs beyond a message's body: the
// record's properties (32 KiB at most) and fixed fields, its index keys
// (topic#key, from the same properties), the entry's encoding and the
// side commands of a delivery or a transaction decision.
const entryHeadroom = 128 << 10

func (b *Broker) openNode() error {
	rc := dledger.DefaultConfig()
	if b.cfg.Raft != nil {
		rc = *b.cfg.Raft
	}
	// One raft entry carries one message of the largest size a producer
	// may send, with its properties, index keys and side commands — also
	// when a delay or timer delivery rebuilds it for a longer real topic.
	rc.MaxBatchBytes = max(rc.MaxBatchBytes, b.cfg.MaxMessageSize+entryHeadroom)
	rc.NodeID = b.self.ID
	rc.RaftAddr = b.self.RaftAddr
	if b.cfg.RaftListen != "" {
		rc.RaftAddr, rc.Advertise = b.cfg.RaftListen, b.self.RaftAddr
	}
	rc.DataDir = filepath.Join(b.cfg.DataDir, "raft")
	rc.Peers = rc.Peers[:0]
	if !b.cfg.Join {
		for _, p := range b.cfg.Peers {
			rc.Peers = append(rc.Peers, dledger.Peer{ID: p.ID, Addr: p.RaftAddr})
		}
	}
	rc.LogStore, rc.Dispatcher, rc.StateMachine = b.store.Log(), b.store, b.meta
	rc.OnLeaderChange = b.reg.leaderChanged
	rc.Logger = b.log
	node, err := dledger.New(rc)
	if err != nil {
		return fmt.Errorf("broker: raft node: %w", err)
	}
	b.node = node
	return nil
}

// build constructs the services, each with what it uses, and installs
// their request processors.
func (b *Broker) build() error {
	cfg := &b.cfg
	host, err := resolveAddrPort(b.self.RemotingAddr)
	if err != nil {
		return fmt.Errorf("broker: advertised address: %w", err)
	}
	levels, err := ParseDelayLevels(cfg.MessageDelayLevel)
	if err != nil {
		return err
	}
	rep := &replica{node: b.node, self: b.self, peers: cfg.Peers, group: cfg.BrokerName, client: b.client, forwardTimeout: cfg.ForwardTimeout,
		noSpace: b.store.Log().SpaceRefusal}
	tbl := &tables{node: b.node, autoCreate: cfg.AutoCreateTopic, perm: b.meta.BrokerPermission}
	topics := &topicTable{meta: b.meta, rep: rep}
	records := &recordBuilder{cluster: cfg.Cluster, storeHost: host, maxBody: cfg.MaxMessageSize, park: &parker{levels: levels}}
	b.rep = rep
	b.reg.rep, b.reg.tables = rep, tbl
	b.offsets = newOffsetCommitter(rep, b.meta, cfg.ForwardTimeout, b.log)
	consumers := newConsumerManager()
	b.locks = newLockManager(cfg.LockExpiry)
	b.scheduled = &scheduled{rep: rep, store: b.store, meta: b.meta, records: records, log: b.log}
	b.timers = &timerScheduler{scheduled: b.scheduled}
	delays := &delayScheduler{scheduled: b.scheduled, levels: levels}
	retries := &retryService{rep: rep, store: b.store, meta: b.meta, topics: topics, records: records, metrics: b.nm}
	txns := newTxnService(rep, b.store, b.meta, records, b.log)
	settings := newRuntimeSettings(cfg, b.meta)
	b.send = &sendService{rep: rep, topics: topics, records: records, retries: retries, registered: b.reg.signal,
		settings: settings, dedupe: newDedupeWindow(cfg.DedupeWindow, rep, b.store), log: b.log, metrics: b.nm}
	subs := subscriptions{propertyFilter: cfg.EnablePropertyFilter}
	b.pull = &pullService{store: b.store, meta: b.meta, topics: topics, consumers: consumers, offsets: b.offsets,
		subs: subs, settings: settings, stop: b.bg.stop, metrics: b.nm,
		reads: &followerReads{rep: rep, meta: b.meta, settings: settings, memory: physicalMemory()}}
	b.clients = &clientService{rep: rep, meta: b.meta, topics: topics, consumers: consumers, producers: newProducerManager(),
		creating: newFlight(), subs: subs, registerAll: b.reg.registerAll, expiry: cfg.ClientChannelExpiry, log: b.log}
	b.runtime = &runtimeInfo{rep: rep, store: b.store, puts: &b.send.puts, stats: b.nm.stats, cluster: cfg.Cluster}
	checker := &txnChecker{txnService: txns, producers: b.clients.producers, settings: settings}
	b.leader = &leaderTerms{node: b.node, onChange: b.locks.clear, log: b.log,
		services: append(delays.services(), leaderService{"timer", b.timers.run}, leaderService{"transaction-check", checker.run},
			leaderService{"disk-full-handoff", (&diskHandoff{node: b.node, full: b.store.Log().DiskFull, log: b.log}).run},
			leaderService{"system-topics", newSystemTopics(rep, topics, cfg.Cluster, cfg.TraceTopicEnable, b.reg.signal, b.log).run})}
	b.acl = &aclService{rep: rep, meta: b.meta, seed: cfg.ACL, cluster: cfg.Cluster, log: b.log}
	rep.sign = b.acl.signForward
	guarded := b.acl.guard(timedMux{b.rs, b.nm})
	for _, s := range []interface{ register(mux) }{
		b.acl, b.send, b.pull, retries, txns, b.clients, b.runtime,
		&replyService{send: b.send, producers: b.clients.producers, store: cfg.StoreReplyMessage, log: b.log},
		&offsetService{rep: rep, store: b.store, meta: b.meta, committer: b.offsets},
		&delayOffsets{meta: b.meta, levels: levels},
		&lockService{rep: rep, locks: b.locks},
		&topicAdmin{rep: rep, meta: b.meta, tables: tbl, cluster: cfg.Cluster, registerAll: b.reg.registerAll, log: b.log},
		&groupAdmin{rep: rep, meta: b.meta, tables: tbl, log: b.log},
		&configAdmin{rep: rep, meta: b.meta, tables: tbl, cfg: &b.cfg, settings: settings},
		&queryAdmin{store: b.store, node: b.node},
		&statsAdmin{rep: rep, store: b.store, meta: b.meta, committer: b.offsets, consumers: consumers, stats: b.nm.stats},
		&connAdmin{rep: rep, store: b.store, meta: b.meta, committer: b.offsets, consumers: consumers, producers: b.clients.producers, log: b.log},
		&raftAdmin{rep: rep, log: b.log},
	} {
		s.register(guarded)
	}
	b.rs.OnConnClose(b.clients.connClosed)
	return nil
}

// ErrOldDataDir means the data directory was written by a raftmq from
// before the store/metadata split (entry and snapshot format 1).
var ErrOldDataDir = errors.New("broker: data directory has format 1")

// checkLayout refuses a format-1 data directory, recognisable by its
// commitlog under raft/: opened as is, raft would find its term but no
// log or readable snapshot and wait for a configuration that never comes.
func checkLayout(dataDir string) error {
	old := filepath.Join(dataDir, "raft", "commitlog")
	if _, err := os.Stat(old); err == nil {
		return fmt.Errorf("%w (%s exists): this binary reads format 2 (commitlog/ beside raft/); remove %s or use the raftmq that wrote it",
			ErrOldDataDir, old, dataDir)
	}
	return nil
}

// resolveAddrPort turns host:port into an IP address and port (msgIds
// carry the store host as 4 or 16 bytes).
func resolveAddrPort(hostport string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(hostport); err == nil {
		return ap, nil
	}
	a, err := net.ResolveTCPAddr("tcp", hostport)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return a.AddrPort(), nil
}

func (b *Broker) closeStore() {
	if err := b.store.Close(); err != nil {
		b.log.Error("closing the store", "error", err)
	}
}

// startBackground starts the node's periodic work once it serves.
func (b *Broker) startBackground() {
	b.store.Start()
	b.reg.start(b.bg)
	b.clients.start(b.bg)
	b.bg.goRun(b.offsets.run)
	b.bg.goRun(b.leader.loop)
	b.bg.goRun(b.acl.seedLoop)
	b.bg.every(statsSampleInterval, b.nm.stats.sampleAll)
	b.startHTTP()
	// The consumequeue and the index are not flushed on a timer: the raft
	// log is the durable copy, the FSM syncs them before every snapshot
	// (the point raft replays from) and replay fills in what a crash lost.
}

// Config is the configuration the broker was built with.
func (b *Broker) Config() Config { return b.cfg }

// Node is the broker's raft node (admin and tests).
func (b *Broker) Node() *dledger.Node { return b.node }

// Store is the node's message store (admin and tests).
func (b *Broker) Store() *store.Store { return b.store }

// Metadata is the node's applied metadata (admin and tests).
func (b *Broker) Metadata() *meta.State { return b.meta }

// AdvertisedAddr is the client-facing address other nodes, name servers
// and clients use (this node's RemotingAddr in Peers).
func (b *Broker) AdvertisedAddr() string { return b.self.RemotingAddr }

// Addr is the bound client-facing address once serving.
func (b *Broker) Addr() net.Addr { return b.rs.Addr() }

// HeldPulls returns how many pulls this node is holding (tests, metrics).
func (b *Broker) HeldPulls() int64 { return b.pull.held.Load() }

// PendingTimers is how many timer messages this node's wheel holds: the
// undelivered timers when it leads, 0 on a follower.
func (b *Broker) PendingTimers() int64 { return b.timers.pending.Load() }

// CorrectMinOffsets moves the consumequeues' min offsets past the messages
// commitlog retention removed, now (the store also does it every 10 s).
func (b *Broker) CorrectMinOffsets() error { return b.store.CorrectMinOffsets() }

// ConsumerSubscription returns the subscription expression a consumer
// group's heartbeats announced for topic on this node (admin and tests).
func (b *Broker) ConsumerSubscription(group, topic string) (expr string, ok bool) {
	s := b.clients.consumers.subscription(group, topic)
	if s == nil {
		return "", false
	}
	return s.SubString, true
}

// Serve serves clients on ln until Shutdown.
//
// Serve also returns, with the cause, when this node can no longer do its
// part: its raft node stopped itself (divergence) or its commitlog failed
// a write or fsync (it refuses writes until reopened). A process that
// ran on would look alive to its supervisor while taking no writes; the
// caller shuts down and exits non-zero, and the restart reopens and
// scans the log.
func (b *Broker) Serve(ln net.Listener) error {
	b.startBackground()
	errc := make(chan error, 1)
	go func() { errc <- b.rs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-b.node.Done():
	case <-b.store.Log().Failed():
	}
	if b.shutting.Load() {
		return <-errc
	}
	err := b.fatalCause()
	b.log.Error("NODE CANNOT GO ON: stopping so that a restart recovers it", "error", err)
	_ = b.rs.Close()
	<-errc
	return err
}

// fatalCause says why the node cannot go on (see Serve).
func (b *Broker) fatalCause() error {
	if err := b.store.Log().Err(); err != nil {
		return fmt.Errorf("broker: commitlog failed: %w", err)
	}
	if err := b.node.Err(); err != nil {
		return fmt.Errorf("broker: raft node stopped: %w", err)
	}
	return errors.New("broker: raft node stopped")
}

// ListenAndServe listens on Config.ListenAddr and serves until Shutdown.
func (b *Broker) ListenAndServe() error {
	ln, err := net.Listen("tcp", b.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("broker: listen %s: %w", b.cfg.ListenAddr, err)
	}
	return b.Serve(ln)
}

// Shutdown stops serving, waits for in-flight requests until ctx ends,
// stops the raft node and closes the store.
func (b *Broker) Shutdown(ctx context.Context) error {
	var errs []error
	b.shutting.Store(true)
	b.stopped.Do(func() {
		b.reg.unregisterAll(ctx)
		b.bg.stopAll()
		if err := b.rs.Shutdown(ctx); err != nil && !errors.Is(err, remoting.ErrServerClosed) {
			errs = append(errs, err)
		}
		b.bg.wait()
		if err := b.client.Close(); err != nil {
			errs = append(errs, err)
		}
		b.store.Halt() // an apply waiting for disk space gives up
		if err := b.node.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := b.store.Close(); err != nil {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}
