package client

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// startColdGroup starts a group whose nodes count a consumer more than
// 16 KiB behind the log's end as far behind (follower reads), with topic
// of 2 queues holding a backlog of n ~300-byte messages on every node.
func startColdGroup(t *testing.T, topic string, n int) (*brokertest.Group, *Producer) {
	t.Helper()
	g := brokertest.Start(t, brokertest.Options{Configure: func(_ int, c *broker.Config) {
		c.AccessMessageInMemoryMaxBytes = 16 << 10
	}})
	createTopic(t, g, topic, 2)
	p := startProducer(t, g)
	ctx := testCtx(t, 30*time.Second)
	pad := strings.Repeat("x", 200)
	for i := 0; i < n; i += 25 {
		var batch []*message.Message
		for j := i; j < min(i+25, n); j++ {
			batch = append(batch, newMsg(topic, fmt.Sprintf("%s-%d-%s", topic, j, pad)))
		}
		if _, err := p.SendBatch(ctx, batch); err != nil {
			t.Fatalf("send batch %d: %v", i/25, err)
		}
	}
	eventually(t, 10*time.Second, func() error {
		for i := range g.Len() {
			if got := maxOffset(t, g, i, topic, 0) + maxOffset(t, g, i, topic, 1); got != int64(n) {
				return fmt.Errorf("node %d holds %d of %d messages", i, got, n)
			}
		}
		return nil
	})
	return g, p
}

// served is how many messages each node has delivered to pulls since it
// started (GET_BROKER_RUNTIME_INFO msgGetTotalTodayNow).
func served(t *testing.T, g *brokertest.Group) []int64 {
	t.Helper()
	out := make([]int64, g.Len())
	for i := range out {
		if g.Broker(i) == nil {
			continue
		}
		r := g.Invoke(i, remoting.NewRequest(remoting.ReqGetBrokerRuntimeInfo, nil, nil))
		var kv protocol.KVTable
		if err := json.Unmarshal(r.Body, &kv); err != nil {
			t.Fatalf("runtime info of node %d: %v", i, err)
		}
		n, err := strconv.ParseInt(kv.Table["msgGetTotalTodayNow"], 10, 64)
		if err != nil {
			t.Fatalf("node %d msgGetTotalTodayNow %q", i, kv.Table["msgGetTotalTodayNow"])
		}
		out[i] = n
	}
	return out
}

// byFollowers sums served counts of the nodes other than leader.
func byFollowers(counts []int64, leader int) int64 {
	sum := int64(0)
	for i, n := range counts {
		if i != leader {
			sum += n
		}
	}
	return sum
}

// expectOnce fails unless every body of want arrived exactly once.
func expectOnce(t *testing.T, c *collector, want int) {
	t.Helper()
	got := c.bodies()
	if len(got) != want {
		t.Fatalf("%d distinct messages, want %d", len(got), want)
	}
	for b, n := range got {
		if n != 1 {
			t.Fatalf("%.20q… delivered %d times", b, n)
		}
	}
}

// suggestions are the brokerIds the consumer's queues pull from next.
func suggestions(gm *groupMember) map[MessageQueue]int64 {
	gm.mu.Lock()
	defer gm.mu.Unlock()
	out := map[MessageQueue]int64{}
	for mq, qs := range gm.queues {
		out[mq] = qs.suggest.Load()
	}
	return out
}

// TestPushReadsColdBacklogFromFollower: a push consumer of a backlog far
// larger than the broker's threshold is sent to a follower, which serves
// most of it; every message arrives exactly once; once caught up the
// consumer pulls from the leader again, which serves what comes next.
func TestPushReadsColdBacklogFromFollower(t *testing.T) {
	const topic, n = "cold", 1000
	g, p := startColdGroup(t, topic, n)
	leader := g.WaitLeader(10 * time.Second)
	c := newCollector()
	pc := startPush(t, g, "cg-cold", "cold", topic, "*", c.handler, WithConsumeFrom(ConsumeFromFirst()))
	c.waitDistinct(t, n, 30*time.Second)
	expectOnce(t, c, n)
	counts := served(t, g)
	t.Logf("served by node (leader %d): %v", leader, counts)
	if byFollowers(counts, leader) < n/2 {
		t.Fatalf("followers served %d of %d messages (by node %v, leader %d), want most", byFollowers(counts, leader), n, counts, leader)
	}

	waitFor(t, 10*time.Second, "every queue back on the leader", func() bool {
		for _, id := range suggestions(pc.gm) {
			if id != 0 {
				return false
			}
		}
		return true
	})
	before := served(t, g)
	sendN(t, p, topic, "tail", 20, nil)
	c.waitDistinct(t, n+20, 10*time.Second)
	after := served(t, g)
	if after[leader]-before[leader] < 20 || byFollowers(after, leader) != byFollowers(before, leader) {
		t.Fatalf("the tail: served by node %v → %v (leader %d), want all 20 by the leader", before, after, leader)
	}
	expectOnce(t, c, n+20)
}

// TestColdBacklogSurvivesFollowerStop: the follower serving a cold
// backlog stops mid-way; the consumer's pulls go back to the leader (and
// any follower it then suggests) and every message still arrives.
func TestColdBacklogSurvivesFollowerStop(t *testing.T) {
	const topic, n = "coldstop", 1000
	g, _ := startColdGroup(t, topic, n)
	leader := g.WaitLeader(10 * time.Second)
	// At most 16 messages a queue are fetched ahead of Poll, so the stop
	// comes while most of the backlog is still to be pulled.
	pc := startPull(t, g, "cg-coldstop", "coldstop", func(pc *PullConsumer) error { return pc.Subscribe(topic, "*") },
		WithConsumeFrom(ConsumeFromFirst()), WithPullBatchSize(8), WithPullThresholds(16, 1<<20, 1000))
	c := newCollector()
	stopped := -1
	ctx := testCtx(t, 60*time.Second)
	for c.distinct() < n {
		msgs, err := pc.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d messages: %v", c.distinct(), err)
		}
		c.add(msgs)
		if stopped >= 0 {
			continue
		}
		if counts := served(t, g); byFollowers(counts, leader) > 0 {
			stopped = (leader + 1) % g.Len()
			if other := (leader + 2) % g.Len(); counts[other] > counts[stopped] {
				stopped = other
			}
			t.Logf("stopping node %d after %d messages (served by node %v)", stopped, c.distinct(), counts)
			g.StopNode(stopped)
		}
	}
	if stopped < 0 {
		t.Fatal("no follower served the backlog")
	}
	// A pull cut by the stop may be answered again: at least once each.
	if got := c.distinct(); got != n {
		t.Fatalf("%d distinct messages, want %d", got, n)
	}
	t.Logf("after the stop, served by node %v", served(t, g))
}
