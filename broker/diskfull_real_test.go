package broker_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/remoting"
)

// Real full disks: every node's data directory is its own 96 MiB tmpfs,
// filled by a file until less than realMinFree is left. The usage ratios
// are off (1.0), so only the real condition refuses writes.
const (
	realDiskSize = "96m"
	realMinFree  = 16 << 20 // the nodes' commitlog MinFreeBytes
	realLeftFree = 8 << 20  // what a filler leaves free: below realMinFree
)

// realDisks are the nodes' tmpfs mounts.
type realDisks struct {
	t   *testing.T
	dir [3]string
}

// mountRealDisks mounts a tmpfs per node (root only: the test is skipped
// otherwise) and unmounts them after the group has stopped.
func mountRealDisks(t *testing.T) *realDisks {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs per node (a real disk that fills up)")
	}
	d := &realDisks{t: t}
	for i := range d.dir {
		dir := filepath.Join(t.TempDir(), "disk")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+realDiskSize, "tmpfs", dir).CombinedOutput(); err != nil {
			t.Skipf("cannot mount tmpfs (%v: %s)", err, out)
		}
		t.Cleanup(func() { // registered before the group's Close, so it runs after it
			if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v: %s", dir, err, out)
			}
		})
		d.dir[i] = dir
	}
	return d
}

func (d *realDisks) options() brokertest.Options {
	return brokertest.Options{Configure: func(i int, c *broker.Config) {
		c.DataDir = filepath.Join(d.dir[i], "data")
		r := &c.Store.CommitLog.Retention
		r.DiskWarnRatio, r.DiskForceRatio, r.DiskRefuseRatio = 1, 1, 1
		r.MinFreeBytes = realMinFree
	}}
}

func (d *realDisks) filler(i int) string { return filepath.Join(d.dir[i], "filler") }

// fill allocates a file on node i's disk that leaves realLeftFree free.
func (d *realDisks) fill(i int) {
	d.t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.dir[i], &st); err != nil {
		d.t.Fatal(err)
	}
	n := int64(st.Bavail)*st.Bsize - realLeftFree
	f, err := os.Create(d.filler(i))
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
		d.t.Fatalf("fill node %d's disk with %d bytes: %v", i, n, err)
	}
}

// free removes node i's filler.
func (d *realDisks) free(i int) {
	d.t.Helper()
	if err := os.Remove(d.filler(i)); err != nil {
		d.t.Fatal(err)
	}
}

// waitDiskFull waits until node i's log refuses writes for lack of space.
func waitDiskFull(g *brokertest.Group, i int) {
	g.Eventually(5*time.Second, func() error {
		if !g.Broker(i).Store().Log().DiskFull() {
			return fmt.Errorf("node %d has not seen its disk full yet", i)
		}
		return nil
	})
}

// checkRefusedDiskFull asserts the answer of a send to a full disk.
func checkRefusedDiskFull(t *testing.T, node int, resp *remoting.Command) {
	t.Helper()
	if resp.Code != remoting.ResServiceNotAvailable || !strings.Contains(resp.Remark, "disk full") {
		t.Fatalf("send to node %d on a full disk answered %d %q, want SERVICE_NOT_AVAILABLE (14) with \"disk full\"",
			node, resp.Code, resp.Remark)
	}
	t.Logf("node %d refused: %s", node, resp.Remark)
}

// checkAllAlive fails if a node's Serve returned: a full disk must not
// stop a node.
func checkAllAlive(t *testing.T, g *brokertest.Group) {
	t.Helper()
	for i := 0; i < g.Len(); i++ {
		if err, exited := g.WaitServeExit(i, 50*time.Millisecond); exited {
			t.Fatalf("node %d stopped on a full disk: %v", i, err)
		}
		if err := g.Broker(i).Store().Log().Err(); err != nil {
			t.Fatalf("node %d's commitlog failed on a full disk: %v", i, err)
		}
	}
}

// sendEventually sends body until the group takes it.
func sendEventually(t *testing.T, g *brokertest.Group, topic, body string) {
	t.Helper()
	g.Eventually(20*time.Second, func() error {
		resp := g.Invoke(g.WaitLeader(5*time.Second), sendReq(topic, 0, "", body))
		if resp.Code != remoting.ResSuccess {
			return fmt.Errorf("send %s: %d %s", body, resp.Code, resp.Remark)
		}
		return nil
	})
}

// TestRealDiskFullAllNodes: with every node's real disk full, sends are
// refused with SERVICE_NOT_AVAILABLE and "disk full" and nothing is
// stored; no node dies; once the fillers are removed the group takes sends
// by itself and holds every acknowledged message.
func TestRealDiskFullAllNodes(t *testing.T) {
	disks := mountRealDisks(t)
	g, leader := startGroup(t, disks.options())
	const topic = "realdiskfull"
	createTopic(t, g, topic, 1)
	want := []string{}
	for i := range 5 {
		body := fmt.Sprintf("before-%d", i)
		send(t, g, leader, topic, 0, "", body)
		want = append(want, body)
	}
	for i := range 3 {
		disks.fill(i)
	}
	for i := range 3 {
		waitDiskFull(g, i)
	}
	for i := 0; i < g.Len(); i++ { // a follower forwards to the leader, which refuses
		checkRefusedDiskFull(t, i, g.Invoke(i, sendReq(topic, 0, "", "while-full")))
	}
	checkAllAlive(t, g)
	for i := range 3 {
		disks.free(i)
	}
	sendEventually(t, g, topic, "after")
	want = append(want, "after")
	checkBodies(t, g, topic, want)
	checkAllAlive(t, g)
}

// TestRealDiskFullLeader: a leader whose real disk fills refuses with
// "disk full" and hands leadership to a follower with space; the group
// keeps taking sends, and the full node catches up once its filler is
// removed.
func TestRealDiskFullLeader(t *testing.T) {
	disks := mountRealDisks(t)
	g, leader := startGroup(t, disks.options())
	const topic = "realdiskfull-leader"
	createTopic(t, g, topic, 1)
	send(t, g, leader, topic, 0, "", "m-0")
	disks.fill(leader)
	waitDiskFull(g, leader)
	if resp := g.Invoke(leader, sendReq(topic, 0, "", "while-full")); resp.Code != remoting.ResSuccess {
		checkRefusedDiskFull(t, leader, resp) // unless it already handed leadership on and forwarded
	} else {
		t.Log("the full leader had handed leadership on already; the send was forwarded")
	}
	g.Eventually(15*time.Second, func() error {
		if l := g.WaitLeader(5 * time.Second); l == leader {
			return fmt.Errorf("node %d, whose disk is full, still leads", leader)
		}
		return nil
	})
	want := []string{"m-0"}
	for i := 1; i < 10; i++ {
		body := fmt.Sprintf("m-%d", i)
		sendEventually(t, g, topic, body)
		want = append(want, body)
	}
	checkAllAlive(t, g)
	disks.free(leader)
	checkBodies(t, g, topic, want)
	checkAllAlive(t, g)
}

// TestRealDiskFullFollower: a follower whose real disk is full refuses the
// leader's entries without dying and costs the group nothing; once its
// filler is removed it catches up by itself.
func TestRealDiskFullFollower(t *testing.T) {
	disks := mountRealDisks(t)
	g, leader := startGroup(t, disks.options())
	const topic = "realdiskfull-follower"
	createTopic(t, g, topic, 1)
	full := followerOf(g, leader)
	disks.fill(full)
	waitDiskFull(g, full)
	want := []string{}
	for i := range 20 {
		body := fmt.Sprintf("m-%d", i)
		send(t, g, leader, topic, 0, "", body)
		want = append(want, body)
	}
	if got := g.Broker(full).Store().MaxOffset(topic, 0); got >= 20 {
		t.Fatalf("the full follower holds %d messages: its disk was not refusing", got)
	}
	checkAllAlive(t, g)
	disks.free(full)
	checkBodies(t, g, topic, want)
	checkAllAlive(t, g)
}
