package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/consumequeue"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/indexfile"
	"github.com/raftmq/raftmq/remoting"
)

// Broker is one node of a broker group: the remoting server clients talk
// to, on top of a dledger node whose FSM fills this node's consumequeues and
// index.
type Broker struct {
	cfg       Config
	log       hclog.Logger
	self      Peer
	storeHost netip.AddrPort

	node  *dledger.Node
	clog  *commitlog.Log
	cq    *consumequeue.Store
	index *indexfile.Store
	sinks *sinks

	rs     *remoting.Server
	client *remoting.Client // to the leader (forwarding) and name servers

	reg  registrar // register.go: name-server registration
	puts putStats  // send.go: counters for runtime info

	consumers     *consumerManager // clients.go: consumer groups on this node
	producers     *producerManager // clients.go: producer groups on this node
	retryCreating *flight          // clients.go: %RETRY% topic creations
	offsetCommits *offsetCommitter // offsets_commit.go: coalesced offsets
	heldPulls     atomic.Int64     // longpoll.go: pulls being held
	delay         *delayService    // delay.go: delay levels and their schedulers
	locks         *lockManager     // lock.go: orderly consumers' queue locks
	timers        *timerService    // timer.go: the timer-message scheduler
	delivered     atomic.Int64     // delay_scheduler.go: delayed/timer messages delivered as leader

	stop    chan struct{}
	stopped sync.Once
	// bgMu orders starting background goroutines against Shutdown's
	// wg.Wait: Serve may still be starting them when Shutdown runs.
	bgMu     sync.Mutex
	closing  bool
	httpAddr net.Addr
	wg       sync.WaitGroup
	hooks    []func() // run on shutdown, after the listener stops
}

// New opens the node's stores and starts its raft node; Serve starts the
// client-facing listener.
func New(cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	self, _ := cfg.self()
	host, err := resolveAddrPort(self.RemotingAddr)
	if err != nil {
		return nil, fmt.Errorf("broker: advertised address: %w", err)
	}
	b := &Broker{cfg: cfg, log: log.Named("broker"), self: self, storeHost: host, stop: make(chan struct{})}
	if err := b.openStores(); err != nil {
		b.closeStores()
		return nil, err
	}
	if err := b.openNode(); err != nil {
		b.closeStores()
		return nil, err
	}
	if err := b.openRemoting(); err != nil {
		_ = b.node.Close()
		b.closeStores()
		return nil, err
	}
	return b, nil
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

func (b *Broker) openStores() error {
	cqc := consumequeue.DefaultConfig()
	cqc.Dir = filepath.Join(b.cfg.DataDir, "consumequeue")
	cqc.Logger = b.log
	cq, err := consumequeue.Open(cqc)
	if err != nil {
		return fmt.Errorf("broker: consumequeue: %w", err)
	}
	b.cq = cq
	ic := indexfile.DefaultConfig()
	ic.Dir = filepath.Join(b.cfg.DataDir, "index")
	ic.Logger = b.log
	if b.cfg.IndexSlots > 0 {
		ic.SlotNum = b.cfg.IndexSlots
	}
	if b.cfg.IndexEntries > 0 {
		ic.IndexNum = b.cfg.IndexEntries
	}
	idx, err := indexfile.Open(ic)
	if err != nil {
		return fmt.Errorf("broker: index: %w", err)
	}
	b.index = idx
	b.sinks = newSinks(b)
	return nil
}

func (b *Broker) closeStores() {
	if b.index != nil {
		if err := b.index.Close(); err != nil {
			b.log.Error("closing index", "error", err)
		}
	}
	if b.cq != nil {
		if err := b.cq.Flush(); err != nil {
			b.log.Error("flushing consumequeue", "error", err)
		}
		if err := b.cq.Close(); err != nil {
			b.log.Error("closing consumequeue", "error", err)
		}
	}
}

func (b *Broker) openNode() error {
	rc := dledger.DefaultConfig()
	if b.cfg.Raft != nil {
		rc = *b.cfg.Raft
	}
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
	clc := commitlog.DefaultConfig()
	if rc.CommitLog != nil {
		clc = *rc.CommitLog
	}
	clc.FlushMode = b.cfg.FlushMode
	if b.cfg.SegmentSize > 0 {
		clc.SegmentSize = b.cfg.SegmentSize
	}
	clc.Logger = b.log
	rc.CommitLog = &clc
	rc.QueueSink, rc.IndexSink = b.sinks, b.sinks
	rc.OnLeaderChange = b.leaderChanged
	rc.Logger = b.log
	node, err := dledger.New(rc)
	if err != nil {
		return fmt.Errorf("broker: raft node: %w", err)
	}
	b.node, b.clog = node, node.CommitLog()
	return nil
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
	cl, err := remoting.NewClient(ccfg)
	if err != nil {
		return err
	}
	b.rs, b.client = rs, cl
	b.registerProcessors()
	return nil
}

// Node is the broker's raft node (admin and tests).
func (b *Broker) Node() *dledger.Node { return b.node }

// AdvertisedAddr is the client-facing address other nodes, name servers
// and clients use (this node's RemotingAddr in Peers).
func (b *Broker) AdvertisedAddr() string { return b.self.RemotingAddr }

// Addr is the bound client-facing address once serving.
func (b *Broker) Addr() net.Addr { return b.rs.Addr() }

// Serve serves clients on ln until Shutdown.
func (b *Broker) Serve(ln net.Listener) error {
	b.startBackground()
	return b.rs.Serve(ln)
}

// ListenAndServe listens on Config.ListenAddr and serves until Shutdown.
func (b *Broker) ListenAndServe() error {
	ln, err := net.Listen("tcp", b.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("broker: listen %s: %w", b.cfg.ListenAddr, err)
	}
	return b.Serve(ln)
}

// goBackground runs fn until Shutdown; fn must return when stop closes.
func (b *Broker) goBackground(fn func(stop <-chan struct{})) {
	b.bgMu.Lock()
	defer b.bgMu.Unlock()
	if b.closing {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn(b.stop)
	}()
}

// every runs fn each interval until Shutdown.
func (b *Broker) every(interval time.Duration, fn func()) {
	b.goBackground(func(stop <-chan struct{}) {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fn()
			}
		}
	})
}

// Shutdown stops serving, waits for in-flight requests until ctx ends,
// stops the raft node and closes the stores.
func (b *Broker) Shutdown(ctx context.Context) error {
	var errs []error
	b.stopped.Do(func() {
		b.unregisterAll(ctx)
		b.bgMu.Lock()
		b.closing = true
		b.bgMu.Unlock()
		close(b.stop)
		if err := b.rs.Shutdown(ctx); err != nil && !errors.Is(err, remoting.ErrServerClosed) {
			errs = append(errs, err)
		}
		b.wg.Wait()
		for _, h := range b.hooks {
			h()
		}
		if err := b.client.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := b.node.Close(); err != nil {
			errs = append(errs, err)
		}
		b.closeStores()
	})
	return errors.Join(errs...)
}
