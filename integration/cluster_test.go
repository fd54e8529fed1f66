package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftmq/raftmq/remoting"
)

// cluster is a name server and a 3-node broker group, each a raftmq
// process on loopback.
type cluster struct {
	t      *testing.T
	nsAddr string
	ns     *proc
	nodes  []*clusterNode
	peers  string
	admin  *remoting.Client
	opts   clusterOpts
	// brokerName is the group's name (broker-a unless addGroup).
	brokerName string
	// extraNS are the name servers beyond ns (clusterOpts.moreNamesrvs).
	extraNS      []*proc
	extraNSAddrs []string
}

// clusterOpts are extra flags of the processes, the admin client's config
// (TLS, for instance) and, when set, how the harness signs its own
// requests (an ACL admin account).
type clusterOpts struct {
	namesrvArgs, brokerArgs []string
	admin                   func(*remoting.ClientConfig)
	sign                    func(*remoting.Command)
	// moreNamesrvs starts this many more name servers; every broker
	// registers with all of them (extraNS).
	moreNamesrvs int
}

type clusterNode struct {
	id, raft, addr, data string
	p                    *proc
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	return startClusterWith(t, clusterOpts{})
}

func startClusterWith(t *testing.T, opts clusterOpts) *cluster {
	t.Helper()
	c := &cluster{t: t, nsAddr: "127.0.0.1:" + strconv.Itoa(freePort(t)), opts: opts, brokerName: "broker-a"}
	c.ns = startProc(t, append([]string{"namesrv", "--listen", c.nsAddr, "--log-level", "warn"}, opts.namesrvArgs...)...)
	for range opts.moreNamesrvs {
		addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
		c.extraNS = append(c.extraNS, startProc(t, append([]string{"namesrv", "--listen", addr, "--log-level", "warn"}, opts.namesrvArgs...)...))
		c.extraNSAddrs = append(c.extraNSAddrs, addr)
	}
	c.startNodes()
	acfg := remoting.DefaultClientConfig()
	if opts.admin != nil {
		opts.admin(&acfg)
	}
	cl, err := remoting.NewClient(acfg)
	if err != nil {
		t.Fatal(err)
	}
	c.admin = cl
	t.Cleanup(func() { cl.Close() })
	c.waitLeader(20 * time.Second)
	return c
}

// startNodes starts the group's three nodes.
func (c *cluster) startNodes() {
	var peers []string
	for i := 1; i <= 3; i++ {
		id := "n" + strconv.Itoa(i)
		if c.brokerName != "broker-a" {
			id = c.brokerName + "-" + id
		}
		n := &clusterNode{
			id:   id,
			raft: "127.0.0.1:" + strconv.Itoa(freePort(c.t)),
			addr: "127.0.0.1:" + strconv.Itoa(freePort(c.t)),
			data: filepath.Join(c.t.TempDir(), id),
		}
		c.nodes = append(c.nodes, n)
		peers = append(peers, n.id+"/"+n.raft+"/"+n.addr)
	}
	c.peers = strings.Join(peers, ",")
	for i := range c.nodes {
		c.start(i)
	}
}

// addGroup starts another 3-node group, name, under c's name server and
// waits for its leader; the returned cluster shares c's name server and
// admin client.
func (c *cluster) addGroup(name string) *cluster {
	c.t.Helper()
	g := &cluster{t: c.t, nsAddr: c.nsAddr, ns: c.ns, opts: c.opts, admin: c.admin, brokerName: name, extraNSAddrs: c.extraNSAddrs}
	g.startNodes()
	g.waitLeader(20 * time.Second)
	return g
}

// start (re)starts node i as a process on its data directory.
func (c *cluster) start(i int) {
	n := c.nodes[i]
	args := []string{"broker", "--cluster", "itest", "--broker-name", c.brokerName, "--node-id", n.id,
		"--peers", c.peers, "--listen", n.addr, "--data", n.data, "--namesrv", strings.Join(append([]string{c.nsAddr}, c.extraNSAddrs...), ";"),
		"--auto-create-topic", "--segment-size", strconv.Itoa(64 << 20), "--log-level", "warn",
		// Check-backs within a test's time (RocketMQ's 6 s / 30 s defaults
		// otherwise), with enough of them to outlast the official client's
		// 30 s heartbeat, which is when a new leader first hears of it.
		"--transaction-timeout", "1s", "--transaction-check-interval", "1s", "--transaction-check-max", "60"}
	n.p = startProc(c.t, append(args, c.opts.brokerArgs...)...)
}

// invoke sends one harness request to addr, signed when the cluster
// runs an ACL.
func (c *cluster) invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if c.opts.sign != nil {
		c.opts.sign(req)
	}
	return c.admin.Invoke(ctx, addr, req)
}

// kill sends SIGKILL to node i and waits for it to die.
func (c *cluster) kill(i int) {
	n := c.nodes[i]
	if err := n.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	_ = n.p.wait(c.t, 10*time.Second)
}

// runtime asks node i for its runtime table.
func (c *cluster) runtime(i int) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.invoke(ctx, c.nodes[i].addr, remoting.NewRequest(remoting.ReqGetBrokerRuntimeInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	if err := remoting.AsError(resp); err != nil {
		return nil, err
	}
	return parseRuntime(resp.Body)
}

// waitLeader waits until one live node reports itself leader.
func (c *cluster) waitLeader(d time.Duration, skip ...int) int {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		for i := range c.nodes {
			if contains(skip, i) {
				continue
			}
			if tab, err := c.runtime(i); err == nil && tab["raftState"] == "Leader" {
				return i
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no leader within %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// maxOffsets returns node i's max offset of each queue of topic.
func (c *cluster) maxOffsets(i int, topic string, queues int) ([]int64, error) {
	out := make([]int64, queues)
	for q := 0; q < queues; q++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := c.invoke(ctx, c.nodes[i].addr, remoting.NewRequest(remoting.ReqGetMaxOffset,
			map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}, nil))
		cancel()
		if err != nil {
			return nil, err
		}
		if resp.Code != remoting.ResSuccess {
			return nil, fmt.Errorf("GET_MAX_OFFSET %s/%d on node %d: %d %s", topic, q, i, resp.Code, resp.Remark)
		}
		out[q], err = strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
