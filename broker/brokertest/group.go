// Package brokertest runs a real broker group in-process for tests: a name
// server and N broker nodes on loopback TCP, each with its own data
// directory under t.TempDir(), which can be killed and restarted.
package brokertest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/internal/tlsconf"
	"github.com/raftmq/raftmq/namesrv"
	"github.com/raftmq/raftmq/remoting"
)

// Options shape a Group.
type Options struct {
	// Nodes is the group size (default 3).
	Nodes int
	// Configure, if set, adjusts each node's config before it starts.
	Configure func(i int, c *broker.Config)
	// LogLevel of the nodes' logs written to t.Log (default warn).
	LogLevel hclog.Level
	// TLS runs everything over mutual TLS with certificates of a
	// throwaway CA (Group.TLS names the files): the name server, the
	// client ports, HTTP, the nodes' own clients, raft, and Group.Client.
	TLS bool
	// ConfigureNamesrv, if set, adjusts the name server's config (its
	// Remoting.TLS, for instance).
	ConfigureNamesrv func(c *namesrv.Config)
	// ConfigureClient, if set, adjusts the config of Group.Client.
	ConfigureClient func(c *remoting.ClientConfig)
}

// Group is a running name server and broker group.
type Group struct {
	t       testing.TB
	opts    Options
	NSAddr  string
	ns      *namesrv.Server
	nsDone  chan error
	peers   []broker.Peer
	dirs    []string
	mu      sync.Mutex
	brokers []*running
	Client  *remoting.Client
	// TLS names the certificate files with Options.TLS.
	TLS tlsconf.Generated
	tls *tlsConfigs
}

type running struct {
	b    *broker.Broker
	done chan struct{} // closed when Serve returned, with err
	err  error
}

// Start starts a group and waits for it to elect a leader.
func Start(t testing.TB, opts Options) *Group {
	t.Helper()
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.LogLevel == hclog.NoLevel {
		opts.LogLevel = hclog.Warn
	}
	g := &Group{t: t, opts: opts}
	if opts.TLS {
		g.setupTLS()
	}
	g.startNamesrv()
	addrs := freeAddrs(t, 2*opts.Nodes)
	for i := 0; i < opts.Nodes; i++ {
		g.peers = append(g.peers, broker.Peer{
			ID:           "n" + strconv.Itoa(i+1),
			RaftAddr:     addrs[2*i],
			RemotingAddr: addrs[2*i+1],
		})
		g.dirs = append(g.dirs, t.TempDir())
	}
	g.brokers = make([]*running, opts.Nodes)
	for i := range g.brokers {
		g.StartNode(i)
	}
	ccfg := remoting.DefaultClientConfig()
	if g.tls != nil {
		ccfg.TLS = g.tls.client
	}
	if opts.ConfigureClient != nil {
		opts.ConfigureClient(&ccfg)
	}
	cl, err := remoting.NewClient(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	g.Client = cl
	t.Cleanup(g.Close)
	g.WaitLeader(10 * time.Second)
	return g
}

// freeAddrs returns n distinct free loopback addresses: their listeners
// stay open until all are taken, so the kernel cannot hand one port out
// twice (two nodes given the same port fail as "listed twice").
func freeAddrs(t testing.TB, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out = append(out, ln.Addr().String())
	}
	return out
}

func (g *Group) logger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: g.opts.LogLevel, Output: testWriter{g.t}})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func (g *Group) startNamesrv() {
	cfg := namesrv.DefaultConfig()
	cfg.Logger = g.logger("namesrv")
	if g.tls != nil {
		cfg.Remoting.TLS = g.tls.server
	}
	if g.opts.ConfigureNamesrv != nil {
		g.opts.ConfigureNamesrv(&cfg)
	}
	ns, err := namesrv.New(cfg)
	if err != nil {
		g.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		g.t.Fatal(err)
	}
	g.ns, g.NSAddr, g.nsDone = ns, ln.Addr().String(), make(chan error, 1)
	go func() { g.nsDone <- ns.Serve(ln) }()
}

// Config returns node i's configuration (as started).
func (g *Group) Config(i int) broker.Config {
	c := broker.DefaultConfig()
	c.Cluster, c.BrokerName = "test-cluster", "broker-a"
	c.NodeID = g.peers[i].ID
	c.Peers = g.peers
	c.ListenAddr = g.peers[i].RemotingAddr
	c.DataDir = g.dirs[i]
	c.NameServers = []string{g.NSAddr}
	c.AutoCreateTopic = true
	c.Store.Index.SlotNum, c.Store.Index.IndexNum = 1024, 4096
	c.Store.CommitLog.SegmentSize = 8 << 20
	c.Logger = g.logger(c.NodeID)
	if g.tls != nil {
		g.tls.configure(&c)
	}
	if g.opts.Configure != nil {
		g.opts.Configure(i, &c)
	}
	return c
}

// StartNode (re)starts node i on its data directory and addresses.
func (g *Group) StartNode(i int) {
	g.t.Helper()
	b, err := broker.New(g.Config(i))
	if err != nil {
		g.t.Fatalf("start node %d: %v", i, err)
	}
	var ln net.Listener
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err = net.Listen("tcp", g.peers[i].RemotingAddr)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the old socket may linger briefly
	}
	if err != nil {
		_ = b.Shutdown(context.Background())
		g.t.Fatalf("listen node %d: %v", i, err)
	}
	r := &running{b: b, done: make(chan struct{})}
	go func() {
		r.err = b.Serve(ln)
		close(r.done)
	}()
	g.mu.Lock()
	g.brokers[i] = r
	g.mu.Unlock()
}

// StopNode shuts node i down (gracefully, as on SIGTERM).
func (g *Group) StopNode(i int) {
	g.t.Helper()
	g.mu.Lock()
	r := g.brokers[i]
	g.brokers[i] = nil
	g.mu.Unlock()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.b.Shutdown(ctx); err != nil {
		g.t.Errorf("shutdown node %d: %v", i, err)
	}
	<-r.done
}

// WaitServeExit waits up to d for node i's Serve to return on its own (it
// does when the node cannot go on) and returns its error; ok is false if
// it still serves.
func (g *Group) WaitServeExit(i int, d time.Duration) (err error, ok bool) {
	g.mu.Lock()
	r := g.brokers[i]
	g.mu.Unlock()
	if r == nil {
		return nil, false
	}
	select {
	case <-r.done:
		return r.err, true
	case <-time.After(d):
		return nil, false
	}
}

// Broker returns node i, nil if stopped.
func (g *Group) Broker(i int) *broker.Broker {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.brokers[i]; r != nil {
		return r.b
	}
	return nil
}

// Addr is node i's client-facing address.
func (g *Group) Addr(i int) string { return g.peers[i].RemotingAddr }

// Len is the group size.
func (g *Group) Len() int { return len(g.peers) }

// WaitLeader waits until a running node is leader and every running node
// knows it, and returns its index.
func (g *Group) WaitLeader(d time.Duration) int {
	g.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if i, ok := g.agreedLeader(); ok {
			return i
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("no leader within %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// agreedLeader returns the leader once every running node knows it, so a
// test that goes on to use a follower finds it following that leader.
func (g *Group) agreedLeader() (int, bool) {
	leader := -1
	for i := range g.peers {
		if b := g.Broker(i); b != nil && b.Node().IsLeader() {
			leader = i
		}
	}
	if leader < 0 {
		return 0, false
	}
	id := g.Broker(leader).Node().ID()
	for i := range g.peers {
		if b := g.Broker(i); b != nil {
			if _, lid := b.Node().Leader(); lid != id {
				return 0, false
			}
		}
	}
	return leader, true
}

// WaitApplied waits until every running node has applied every entry the
// leader held when it was called. A send is acknowledged once a majority
// stored it, and a node's queues, index and offsets show it once that node
// applied it, a moment later: a test that reads right after acknowledged
// writes (max offsets, stats, a reset to the latest offset, a query by
// key) waits here first.
func (g *Group) WaitApplied(d time.Duration) {
	g.t.Helper()
	leader := g.Broker(g.WaitLeader(d))
	if leader == nil {
		g.t.Fatal("WaitApplied: the leader stopped")
	}
	// A barrier returns once the leader applied everything before it; its
	// applied index (of commands: raft's no-ops and barriers never reach
	// the state machine) is then what every node must reach.
	if err := leader.Node().Raft().Barrier(d).Error(); err != nil {
		g.t.Fatalf("WaitApplied: barrier on the leader: %v", err)
	}
	want := leader.Node().AppliedIndex()
	g.Eventually(d, func() error {
		for i := range g.peers {
			if b := g.Broker(i); b != nil {
				if got := b.Node().AppliedIndex(); got < want {
					return fmt.Errorf("node %d applied up to %d, the leader %d", i, got, want)
				}
			}
		}
		return nil
	})
}

// Invoke sends req to node i and fails the test on a transport error.
func (g *Group) Invoke(i int, req *remoting.Command) *remoting.Command {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := g.Client.Invoke(ctx, g.Addr(i), req)
	if err != nil {
		g.t.Fatalf("invoke %s on node %d: %v", remoting.CodeName(req.Code), i, err)
	}
	return resp
}

// Eventually retries cond until it returns nil or d passes.
func (g *Group) Eventually(d time.Duration, cond func() error) {
	g.t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("condition not met within %v: %v", d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Close stops every node and the name server.
func (g *Group) Close() {
	if g.Client != nil {
		g.Client.Close()
	}
	for i := range g.brokers {
		g.StopNode(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.ns.Shutdown(ctx); err != nil {
		g.t.Errorf("namesrv shutdown: %v", err)
	}
	<-g.nsDone
}

// String describes the group for failure messages.
func (g *Group) String() string { return fmt.Sprintf("group %v, namesrv %s", g.peers, g.NSAddr) }
