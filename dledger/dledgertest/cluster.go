// Package dledgertest runs dledger groups in-process for tests: N nodes
// over raft's in-memory transport (links can be cut) or loopback TCP,
// kill and restart on the same data, partitions, and logs into t.Log.
package dledgertest

import (
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/vfs"
)

// Options configure a Cluster.
type Options struct {
	// Nodes is the group size; default 3.
	Nodes int
	// TCP uses the node's own loopback TCP transport instead of raft's
	// in-memory one. Partitions need the in-memory transport.
	TCP bool
	// Configure, if set, adjusts each node's Config before it starts.
	Configure func(i int, c *dledger.Config)
	// ConfigureLog, if set, adjusts each node's commitlog Config before
	// it is opened (not with InmemLog).
	ConfigureLog func(i int, c *commitlog.Config)
	// MemFS puts each node's commitlog on its own vfs.MemFS, kept across
	// restarts as a disk would be, so that LosePower can drop what the
	// node had not fsynced. Raft's vote/term store and its snapshots stay
	// in Dir on the real disk (both are fsynced as they are written).
	MemFS bool
	// InmemLog uses raft's InmemStore instead of the node's commitlog; the
	// store is kept across restarts, as a disk would be.
	InmemLog bool
	// OpenStore, if set, opens node i's log store and dispatcher in dir
	// (a message store) at every start instead of the harness's commitlog
	// and MemDispatcher; close is called after the node stops. Member.Sink
	// and Member.Log are then nil.
	OpenStore func(i int, dir string) (logs raft.LogStore, d dledger.Dispatcher, close func() error, err error)
}

// Member is one node slot of the cluster; its node is nil while killed.
type Member struct {
	ID   string
	Addr string
	Dir  string
	// Mem is the InmemStore with Options.InmemLog (kept across restarts,
	// as a disk would be), else nil.
	Mem raft.LogStore
	// FS is the commitlog's disk with Options.MemFS, else nil.
	FS *vfs.MemFS
	// Log is the node's commitlog in Dir while it runs (nil with
	// InmemLog or while killed).
	Log *commitlog.Log
	// Sink receives the applied messages; kept across restarts.
	Sink *MemDispatcher
	// SM is the running node's state machine, new at every start (it is
	// rebuilt from the snapshot and the log, as in-memory state is).
	SM    *MemStateMachine
	trans *raft.InmemTransport
	// dispatch and closeStore come from Options.OpenStore.
	dispatch   dledger.Dispatcher
	closeStore func() error
	node       *dledger.Node
	group      int
}

// Cluster is a running test group.
type Cluster struct {
	t    testing.TB
	opts Options
	log  hclog.Logger

	mu      sync.Mutex
	members []*Member
}

// New starts a bootstrapped group and registers its shutdown with
// t.Cleanup.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	c := &Cluster{t: t, opts: opts, log: TestLogger(t)}
	for i := 0; i < opts.Nodes; i++ {
		c.members = append(c.members, c.newMember(i))
	}
	t.Cleanup(c.Close)
	for i := range c.members {
		c.start(i, true)
	}
	return c
}

// freePort picks a loopback port. Another process may grab it before the
// node binds; that is rare enough for tests.
func freePort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dledgertest: listen: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (c *Cluster) newMember(i int) *Member {
	m := &Member{ID: fmt.Sprintf("n%d", i), Dir: filepath.Join(c.t.TempDir(), fmt.Sprintf("n%d", i)), Sink: NewMemDispatcher()}
	m.Addr = m.ID
	if c.opts.TCP {
		m.Addr = freePort(c.t)
	}
	if c.opts.InmemLog {
		m.Mem = raft.NewInmemStore()
	}
	if c.opts.MemFS {
		m.FS = vfs.NewMem()
	}
	return m
}

// openLog opens member i's log: its InmemStore, the store of
// Options.OpenStore, or its commitlog in Dir.
func (c *Cluster) openLog(i int) (raft.LogStore, error) {
	m := c.members[i]
	if m.Mem != nil {
		return m.Mem, nil
	}
	if c.opts.OpenStore != nil {
		logs, d, closer, err := c.opts.OpenStore(i, filepath.Join(m.Dir, "store"))
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		m.dispatch, m.closeStore, m.Sink = d, closer, nil
		c.mu.Unlock()
		return logs, nil
	}
	cc := commitlog.DefaultConfig()
	cc.Dir = filepath.Join(m.Dir, "commitlog")
	cc.Span = dledger.SpanFunc
	// Small segments so retention tests can seal and delete some;
	// disk usage pinned low so a full CI disk does not refuse writes.
	cc.SegmentSize = 256 << 10
	cc.Retention.DiskUsage = func(string) (float64, error) { return 0.1, nil }
	cc.Logger = c.log.With("node", m.ID)
	if m.FS != nil {
		cc.FS = m.FS
	}
	if c.opts.ConfigureLog != nil {
		c.opts.ConfigureLog(i, &cc)
	}
	l, err := commitlog.Open(cc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	m.Log = l
	c.mu.Unlock()
	return l, nil
}

func (c *Cluster) config(i int, bootstrap bool, logs raft.LogStore) dledger.Config {
	m := c.members[i]
	sm := NewMemStateMachine()
	c.mu.Lock()
	m.SM = sm
	c.mu.Unlock()
	cfg := dledger.DefaultConfig()
	cfg.NodeID, cfg.DataDir, cfg.LogStore = m.ID, m.Dir, logs
	cfg.Dispatcher, cfg.StateMachine = m.Sink, sm
	if m.dispatch != nil {
		cfg.Dispatcher = m.dispatch
	}
	cfg.RaftAddr = m.Addr
	cfg.Logger = c.log.With("node", m.ID)
	if bootstrap {
		for _, o := range c.members {
			cfg.Peers = append(cfg.Peers, dledger.Peer{ID: o.ID, Addr: o.Addr})
		}
	}
	if !c.opts.TCP {
		_, m.trans = raft.NewInmemTransportWithTimeout(raft.ServerAddress(m.Addr), time.Second)
		cfg.Transport = m.trans
	}
	if c.opts.Configure != nil {
		c.opts.Configure(i, &cfg)
	}
	return cfg
}

func (c *Cluster) start(i int, bootstrap bool) {
	c.t.Helper()
	logs, err := c.openLog(i)
	if err != nil {
		c.t.Fatalf("dledgertest: open log of %s: %v", c.members[i].ID, err)
	}
	cfg := c.config(i, bootstrap, logs)
	n, err := dledger.New(cfg)
	if err != nil {
		c.closeLog(c.members[i])
		c.t.Fatalf("dledgertest: start %s: %v", c.members[i].ID, err)
	}
	c.mu.Lock()
	c.members[i].node = n
	c.mu.Unlock()
	c.relink()
}

// AddMember creates a new, empty node slot (not yet a voter) and starts
// it in join mode. Its index is returned; make it a voter with
// Leader().AddVoter.
func (c *Cluster) AddMember() int {
	c.t.Helper()
	i := len(c.members)
	m := c.newMember(i)
	c.mu.Lock()
	c.members = append(c.members, m)
	c.mu.Unlock()
	c.start(i, false)
	return i
}

// relink connects every pair of live in-memory transports in the same
// partition group and disconnects all others.
func (c *Cluster) relink() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.members {
		if a.trans == nil {
			continue
		}
		for _, b := range c.members {
			if a == b {
				continue
			}
			a.trans.Disconnect(raft.ServerAddress(b.Addr))
			if a.node != nil && b.node != nil && b.trans != nil && a.group == b.group {
				a.trans.Connect(raft.ServerAddress(b.Addr), b.trans)
			}
		}
	}
}

// Node returns node i, nil while it is killed.
func (c *Cluster) Node(i int) *dledger.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[i].node
}

// Member returns slot i.
func (c *Cluster) Member(i int) *Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[i]
}

// Len returns the number of node slots.
func (c *Cluster) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.members)
}

// Live returns the indexes of running nodes.
func (c *Cluster) Live() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for i, m := range c.members {
		if m.node != nil {
			out = append(out, i)
		}
	}
	return out
}

// WaitLeader waits until exactly one node among those given (default:
// all live) is leader and the others that are connected to it agree, and
// returns its index.
func (c *Cluster) WaitLeader(timeout time.Duration, among ...int) int {
	c.t.Helper()
	var leader int
	c.Eventually(timeout, func() error {
		set := among
		if len(set) == 0 {
			set = c.Live()
		}
		leader = -1
		for _, i := range set {
			n := c.Node(i)
			if n != nil && n.IsLeader() {
				if leader >= 0 {
					return fmt.Errorf("two leaders: n%d and n%d", leader, i)
				}
				leader = i
			}
		}
		if leader < 0 {
			return fmt.Errorf("no leader among %v", set)
		}
		return nil
	})
	return leader
}

// Eventually polls cond every 10 ms until it returns nil or timeout
// passes, then fails the test with cond's last error.
func (c *Cluster) Eventually(timeout time.Duration, cond func() error) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("dledgertest: condition not met within %v: %v", timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitConverged waits until every live node has applied the same index
// and holds the same counters and state-machine state.
func (c *Cluster) WaitConverged(timeout time.Duration) {
	c.t.Helper()
	c.Eventually(timeout, func() error {
		live := c.Live()
		if len(live) == 0 {
			return nil
		}
		var last uint64
		for _, i := range live {
			if l := c.Node(i).Raft().LastIndex(); l > last {
				last = l
			}
		}
		want, err := c.state(live[0])
		if err != nil {
			return err
		}
		for _, i := range live {
			n := c.Node(i)
			if got := n.Raft().AppliedIndex(); got != last {
				return fmt.Errorf("n%d applied %d of %d", i, got, last)
			}
			got, err := c.state(i)
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("n%d state differs from n%d", i, live[0])
			}
		}
		return nil
	})
}

// state is node i's applied counters and state machine, comparable.
func (c *Cluster) state(i int) (string, error) {
	n, m := c.Node(i), c.Member(i)
	sm, err := m.SM.Snapshot()
	if err != nil {
		return "", err
	}
	return fmt.Sprint(n.MaxCommitOffset(), n.Queues(), string(sm)), nil
}

// Close stops every node.
func (c *Cluster) Close() {
	for i := range c.members {
		c.Kill(i)
	}
}
