package broker_test

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/remoting"
)

// diskGauges are the nodes' simulated disk usage, read by their logs'
// retention checks.
type diskGauges [3]atomic.Uint64

func (d *diskGauges) set(i int, usage float64) { d[i].Store(math.Float64bits(usage)) }

func (d *diskGauges) options() brokertest.Options {
	for i := range d {
		d.set(i, 0.1)
	}
	return brokertest.Options{Configure: func(i int, c *broker.Config) {
		c.Store.CommitLog.Retention.DiskUsage = func(string) (float64, error) { return math.Float64frombits(d[i].Load()), nil }
		c.Store.CommitLog.Retention.CheckInterval = 50 * time.Millisecond
	}}
}

// TestDiskFullRefusesSendsAndRecovers: with the disk of every node above
// the refuse ratio, a send is answered SERVICE_NOT_AVAILABLE with a remark
// that says the disk is full, and nothing is stored; when space returns
// the group takes sends again by itself, and every message acknowledged
// before is still there.
func TestDiskFullRefusesSendsAndRecovers(t *testing.T) {
	var disks diskGauges
	g, leader := startGroup(t, disks.options())
	const topic = "diskfull"
	createTopic(t, g, topic, 1)
	for i := range 5 {
		send(t, g, leader, topic, 0, "", fmt.Sprintf("before-%d", i))
	}
	for i := range 3 {
		disks.set(i, 0.95)
	}
	g.Eventually(5*time.Second, func() error {
		for i := range 3 {
			if !g.Broker(i).Store().Log().DiskFull() {
				return fmt.Errorf("node %d has not seen its disk full yet", i)
			}
		}
		return nil
	})
	resp := g.Invoke(g.WaitLeader(5*time.Second), sendReq(topic, 0, "", "while-full"))
	if resp.Code != remoting.ResServiceNotAvailable || !strings.Contains(resp.Remark, "disk") {
		t.Fatalf("send on a full disk answered %d %q, want SERVICE_NOT_AVAILABLE naming the disk", resp.Code, resp.Remark)
	}
	for i := 0; i < g.Len(); i++ { // a follower forwards the refusal
		if resp := g.Invoke(i, sendReq(topic, 0, "", "while-full")); resp.Code != remoting.ResServiceNotAvailable {
			t.Fatalf("send to node %d on a full disk answered %d %q", i, resp.Code, resp.Remark)
		}
	}
	for i := range 3 {
		disks.set(i, 0.5)
	}
	var off int64
	g.Eventually(10*time.Second, func() error {
		resp = g.Invoke(g.WaitLeader(5*time.Second), sendReq(topic, 0, "", "after"))
		if resp.Code != remoting.ResSuccess {
			return fmt.Errorf("send after space returned: %d %s", resp.Code, resp.Remark)
		}
		_, err := fmt.Sscan(resp.ExtFields["queueOffset"], &off)
		return err
	})
	if off != 5 {
		t.Fatalf("first send after the disk was full stored at offset %d, want 5 (nothing stored while full)", off)
	}
	checkBodies(t, g, topic, []string{"before-0", "before-1", "before-2", "before-3", "before-4", "after"})
}

// TestLeaderDiskFullHandsLeadershipOn: a leader whose disk is full hands
// leadership to a follower with space, so the group keeps taking sends;
// the full node catches up once its space returns.
func TestLeaderDiskFullHandsLeadershipOn(t *testing.T) {
	var disks diskGauges
	g, leader := startGroup(t, disks.options())
	const topic = "diskfull-leader"
	createTopic(t, g, topic, 1)
	send(t, g, leader, topic, 0, "", "m-0")
	disks.set(leader, 0.95)
	g.Eventually(15*time.Second, func() error {
		if l := g.WaitLeader(5 * time.Second); l == leader {
			return fmt.Errorf("node %d, whose disk is full, still leads", leader)
		}
		return nil
	})
	want := []string{"m-0"}
	for i := 1; i < 10; i++ {
		body := fmt.Sprintf("m-%d", i)
		g.Eventually(10*time.Second, func() error {
			resp := g.Invoke(g.WaitLeader(5*time.Second), sendReq(topic, 0, "", body))
			if resp.Code != remoting.ResSuccess {
				return fmt.Errorf("send %s: %d %s", body, resp.Code, resp.Remark)
			}
			return nil
		})
		want = append(want, body)
	}
	disks.set(leader, 0.5)
	g.Eventually(15*time.Second, func() error {
		if got := g.Broker(leader).Store().MaxOffset(topic, 0); got != 10 {
			return fmt.Errorf("node %d holds %d of 10 messages", leader, got)
		}
		return nil
	})
	checkBodies(t, g, topic, want)
}

// TestFullLeaderHandsOnPastADownFollower: a leader whose disk is full
// hands leadership on while the follower first in configuration order is
// down. raft's own pick on a tie (a full leader writes nothing, so its
// followers tie) is that follower, and the transfer to it never completed:
// the full node kept leading. Now the transfer goes to the follower that
// answers (a first attempt may still pick the down one if it answered
// just before, and fail; the next comes 5 s later).
func TestFullLeaderHandsOnPastADownFollower(t *testing.T) {
	var disks diskGauges
	g, leader := startGroup(t, disks.options())
	const topic = "diskfull-down"
	createTopic(t, g, topic, 1)
	send(t, g, leader, topic, 0, "", "m-0")
	g.WaitApplied(10 * time.Second)
	down, live := -1, -1
	for i := range g.Len() { // nodes are configured in index order
		switch {
		case i == leader:
		case down < 0:
			down = i
		default:
			live = i
		}
	}
	g.StopNode(down)
	disks.set(leader, 0.95)
	g.Eventually(15*time.Second, func() error {
		if b := g.Broker(live); b == nil || !b.Node().IsLeader() {
			return fmt.Errorf("node %d (follower with space) does not lead; the full node %d leads: %v",
				live, leader, g.Broker(leader).Node().IsLeader())
		}
		return nil
	})
}

// TestFollowerDiskFullDoesNotStopTheGroup: one follower's full disk
// costs the group nothing (the leader and the other follower are a
// majority); once its space returns it catches up by itself.
func TestFollowerDiskFullDoesNotStopTheGroup(t *testing.T) {
	var disks diskGauges
	g, leader := startGroup(t, disks.options())
	const topic = "diskfull-follower"
	createTopic(t, g, topic, 1)
	full := followerOf(g, leader)
	disks.set(full, 0.95)
	want := []string{}
	for i := range 20 {
		body := fmt.Sprintf("m-%d", i)
		send(t, g, leader, topic, 0, "", body)
		want = append(want, body)
	}
	if got := g.Broker(full).Store().MaxOffset(topic, 0); got >= 20 {
		t.Fatalf("the full follower holds %d messages: its disk was not refusing", got)
	}
	disks.set(full, 0.5)
	g.Eventually(15*time.Second, func() error {
		if got := g.Broker(full).Store().MaxOffset(topic, 0); got != 20 {
			return fmt.Errorf("follower %d holds %d of 20 messages", full, got)
		}
		return nil
	})
	checkBodies(t, g, topic, want)
}

// checkBodies waits until every node holds exactly bodies in queue 0 of
// topic (a node whose disk was full catches up after a retry backoff).
func checkBodies(t *testing.T, g *brokertest.Group, topic string, bodies []string) {
	t.Helper()
	g.Eventually(15*time.Second, func() error {
		for i := 0; i < g.Len(); i++ {
			var got []string
			for _, m := range pullAll(t, g, i, topic, 0) {
				got = append(got, string(m.Body))
			}
			if strings.Join(got, ",") != strings.Join(bodies, ",") {
				return fmt.Errorf("node %d holds %v, want %v", i, got, bodies)
			}
		}
		return nil
	})
}
