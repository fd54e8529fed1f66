package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/client"
)

// Container ports and the group's name.
const (
	nsPort      = 9876
	brokerPort  = 10911
	raftPort    = 40911
	brokerGroup = "broker-a"
	diskMB      = 256
)

// node is one container of the cluster.
type node struct {
	id, name, ip string
	disk         *smallDisk // nil: data on the test's temporary directory
	faultDir     string     // the host side of the container's /fault
	args         []string   // docker run arguments after the image
}

// raftAddr and addr are the node's raft and client addresses.
func (n *node) raftAddr() string { return n.ip + ":" + strconv.Itoa(raftPort) }
func (n *node) addr() string     { return n.ip + ":" + strconv.Itoa(brokerPort) }

// cluster is a name server and a broker group in containers on a network
// of their own.
type cluster struct {
	t      *testing.T
	image  string
	bin    string // the raftmq binary on the host, for admin commands
	prefix string // container name prefix
	net    *network
	nsAddr string
	nodes  []*node // n1..n3, then n4 while it is a member
	admin  *client.Admin
}

// startCluster starts the name server and n1..n3 (each on a small disk of
// its own) and waits for a leader.
func startCluster(t *testing.T, image, bin string, run int) *cluster {
	t.Helper()
	prefix := fmt.Sprintf("%s-r%d", runID, run)
	c := &cluster{t: t, image: image, bin: bin, prefix: prefix, net: createNetwork(t, prefix)}
	c.nsAddr = c.net.ip(2) + ":" + strconv.Itoa(nsPort)
	c.runContainer(prefix+"-ns", c.net.ip(2), "", "", "namesrv", "--listen", "0.0.0.0:"+strconv.Itoa(nsPort), "--log-level", "warn")
	var peers []string
	for i := 1; i <= 3; i++ {
		n := &node{id: "n" + strconv.Itoa(i), name: prefix + "-n" + strconv.Itoa(i), ip: c.net.ip(10 + i)}
		n.disk = newSmallDisk(t, runDir(t, n.name), diskMB)
		c.nodes = append(c.nodes, n)
		peers = append(peers, n.id+"/"+n.raftAddr()+"/"+n.addr())
	}
	for _, n := range c.nodes {
		c.startBroker(n, strings.Join(peers, ","), false, n.disk.mnt)
	}
	a, err := client.NewAdmin(client.WithNameServers(c.nsAddr))
	if err != nil {
		t.Fatal(err)
	}
	c.admin = a
	t.Cleanup(func() { a.Close() })
	c.waitHealthy(60 * time.Second)
	return c
}

// brokerArgs are a broker node's command line.
func (c *cluster) brokerArgs(n *node, peers string, join bool) []string {
	args := []string{"broker", "--cluster", "chaos", "--broker-name", brokerGroup, "--node-id", n.id,
		"--peers", peers, "--listen", "0.0.0.0:" + strconv.Itoa(brokerPort),
		"--raft-listen", "0.0.0.0:" + strconv.Itoa(raftPort), "--data", "/data",
		"--namesrv", c.nsAddr, "--segment-size", strconv.Itoa(16 << 20), "--log-level", "warn",
		"--fault-clock-file", "/fault/" + clockFile}
	if join {
		args = append(args, "--join")
	}
	return args
}

// startBroker runs n's container with its data directory mounted at /data
// and a directory of its own at /fault (its clock file: the data disk may
// be full when the clock is stepped).
func (c *cluster) startBroker(n *node, peers string, join bool, data string) {
	n.args = c.brokerArgs(n, peers, join)
	n.faultDir = runDir(c.t, n.name+"-fault")
	c.runContainer(n.name, n.ip, data, n.faultDir, n.args...)
}

// runContainer starts a detached container of the image, restarted by
// Docker when its process exits non-zero, removed at cleanup (its log
// is kept in the test log when the test failed). data and fault, when
// not empty, are mounted at /data and /fault.
func (c *cluster) runContainer(name, ip, data, fault string, args ...string) {
	c.t.Helper()
	dargs := []string{"run", "-d", "--name", name, "--label", labelPID + "=" + strconv.Itoa(os.Getpid()),
		"--network", c.net.name, "--ip", ip, "--restart", "on-failure"}
	if data != "" {
		dargs = append(dargs, "-v", data+":/data")
	}
	if fault != "" {
		dargs = append(dargs, "-v", fault+":/fault")
	}
	mustDocker(c.t, append(append(dargs, c.image), args...)...)
	c.t.Cleanup(func() {
		if c.t.Failed() {
			out, _ := exec.Command("docker", "logs", "--tail", "60", name).CombinedOutput()
			c.t.Logf("last log lines of %s:\n%s", name, out)
			keepLog(c.t, name)
		}
		_, _ = docker("rm", "-f", "-v", name)
	})
}

// runtime asks a node for its runtime table.
func (c *cluster) runtime(n *node) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.admin.BrokerRuntime(ctx, n.addr())
}

// leader returns the node that reports itself leader, or nil.
func (c *cluster) leader() *node {
	for _, n := range c.nodes {
		if tab, err := c.runtime(n); err == nil && tab["raftState"] == "Leader" {
			return n
		}
	}
	return nil
}

// role is the node's raft state as it reports it ("down" when it does
// not answer).
func (c *cluster) role(n *node) string {
	tab, err := c.runtime(n)
	if err != nil {
		return "down"
	}
	return tab["raftState"]
}

// restarts is how often Docker restarted the node's process after it
// exited non-zero.
func (c *cluster) restarts(n *node) int {
	out, err := docker("inspect", "-f", "{{.RestartCount}}", n.name)
	if err != nil {
		return 0
	}
	v, _ := strconv.Atoi(out)
	return v
}

// followers returns the members other than leader l.
func (c *cluster) followers(l *node) []*node {
	var out []*node
	for _, n := range c.nodes {
		if n != l {
			out = append(out, n)
		}
	}
	return out
}

// waitHealthy waits until every member answers and one of them leads.
func (c *cluster) waitHealthy(d time.Duration) {
	c.t.Helper()
	waitFor(c.t, d, "every node up and a leader", func() bool {
		leaders := 0
		for _, n := range c.nodes {
			tab, err := c.runtime(n)
			if err != nil {
				return false
			}
			if tab["raftState"] == "Leader" {
				leaders++
			}
		}
		return leaders == 1
	})
}

// cli runs a raftmq admin command from the host.
func (c *cluster) cli(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.bin, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("raftmq %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// logsSince puts what every node logged since from into the test log.
func (c *cluster) logsSince(from time.Time) {
	for _, n := range c.nodes {
		out, _ := exec.Command("docker", "logs", "--since", from.UTC().Format(time.RFC3339Nano), "--tail", "25", n.name).CombinedOutput()
		c.t.Logf("  %s since the step began:\n%s", n.id, out)
	}
}

// runDir is a directory for name under os.TempDir()/runID (where
// sweepStale finds what a killed run left), deleted at cleanup.
func runDir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), runID, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// waitFor polls cond every 50 ms until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll(d, cond) {
		t.Fatalf("chaos: %s: not within %v", what, d)
	}
}

// poll polls cond every 50 ms until it holds (true) or d passes (false).
func poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// adminTopic is the orderly topic's configuration.
func adminTopic() client.TopicConfig {
	return client.TopicConfig{Topic: topic, Queues: queues, Order: true, BrokerName: brokerGroup}
}

// keepLog writes the whole log of a failed run's container to
// $CHAOS_LOGS/<test>-<container>.log, when CHAOS_LOGS names a directory.
func keepLog(t *testing.T, name string) {
	dir := os.Getenv("CHAOS_LOGS")
	if dir == "" {
		return
	}
	out, _ := exec.Command("docker", "logs", "--timestamps", name).CombinedOutput()
	file := filepath.Join(dir, strings.NewReplacer("/", "_").Replace(t.Name())+"-"+name+".log")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Logf("keeping the log of %s: %v", name, err)
		return
	}
	t.Logf("whole log of %s in %s", name, file)
}
