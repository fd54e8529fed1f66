package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// committedOffset asks the leader for group's committed offset of a queue
// (-1: none).
func committedOffset(t testing.TB, g *brokertest.Group, group, topic string, q int32) int64 {
	t.Helper()
	r := g.Invoke(g.WaitLeader(10*time.Second), remoting.NewRequest(remoting.ReqQueryConsumerOffset,
		map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(q))}, nil))
	if r.Code != remoting.ResSuccess {
		return -1
	}
	n, err := strconv.ParseInt(r.ExtFields["offset"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPushOffsetsCommittedOnClose: a consumer that consumed everything and
// closed committed its offsets; the next consumer of the group gets only
// what was sent after, even though it would start from the first message
// otherwise.
func TestPushOffsetsCommittedOnClose(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "oc", 4)
	p := startProducer(t, g)
	old := sendN(t, p, "oc", "old", 30, nil)
	c1 := newCollector()
	pc, err := NewPushConsumer("cg-oc", pushOpts(t, g, "one", WithCommitInterval(time.Hour), WithConsumeFrom(ConsumeFromFirst()))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe("oc", "*", c1.handler); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	c1.waitDistinct(t, len(old), 20*time.Second)
	if err := pc.Close(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Close waited for UPDATE_CONSUMER_OFFSET's answers; the broker gives
	// them before raft commits, so wait for the values to show. Each
	// queue's committed offset must reach the queue's end: a send retried
	// under load may have stored a message twice, so the end is read from
	// the leader rather than taken from the count sent.
	var last string
	deadline := time.Now().Add(10 * time.Second)
	for {
		leader, done, total := g.WaitLeader(10*time.Second), true, int64(0)
		last = ""
		for q := range int32(4) {
			c, m := committedOffset(t, g, "cg-oc", "oc", q), maxOffset(t, g, leader, "oc", q)
			last += fmt.Sprintf(" q%d committed %d of %d;", q, c, m)
			done, total = done && c == m, total+m
		}
		if done && total >= int64(len(old)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets never reached the queues' ends after Close:%s", last)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fresh := sendN(t, p, "oc", "new", 20, nil)
	c2 := newCollector()
	startPush(t, g, "cg-oc", "two", "oc", "*", c2.handler, WithConsumeFrom(ConsumeFromFirst()))
	c2.waitDistinct(t, len(fresh), 20*time.Second)
	got := c2.bodies()
	for _, b := range old {
		if got[b] > 0 {
			t.Errorf("%s delivered again after a clean close", b)
		}
	}
}

// notFoundStore is a remote store that claims nothing is stored, as a
// broker does once a queue's first message is gone: the ConsumeFrom
// setting then decides.
type notFoundStore struct{ offsetStore }

func (notFoundStore) read(context.Context, MessageQueue) (int64, bool, error) { return 0, false, nil }

// TestPushConsumeFrom: with no stored offset, first starts at the
// beginning, last at the end, timestamp at the first message stored at or
// after it.
func TestPushConsumeFrom(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "cf", 2)
	p := startProducer(t, g)
	before := sendN(t, p, "cf", "before", 10, nil)
	// Store timestamps are in ms; keep the cut clear of both batches.
	sent := time.Now()
	waitFor(t, time.Second, "the clock to move on", func() bool { return time.Since(sent) > 5*time.Millisecond })
	cut := time.Now()
	waitFor(t, time.Second, "the clock to pass the cut", func() bool { return time.Since(cut) > 5*time.Millisecond })
	middle := sendN(t, p, "cf", "middle", 10, nil)

	cases := []struct {
		name string
		from ConsumeFrom
		want []string
	}{
		{"first", ConsumeFromFirst(), append(append([]string{}, before...), middle...)},
		{"last", ConsumeFromLast(), nil},
		{"timestamp", ConsumeFromTimestamp(cut), middle},
	}
	var cs []*collector
	for _, tc := range cases {
		c := newCollector()
		cs = append(cs, c)
		pc, err := NewPushConsumer("cg-cf-"+tc.name, pushOpts(t, g, tc.name, WithConsumeFrom(tc.from))...)
		if err != nil {
			t.Fatal(err)
		}
		pc.gm.store = notFoundStore{pc.gm.store}
		if err := pc.Subscribe("cf", "*", c.handler); err != nil {
			t.Fatal(err)
		}
		if err := pc.Start(testCtx(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Close(context.Background()) })
		waitFor(t, 10*time.Second, tc.name+" assignment", func() bool { return len(queuesOf(pc.Assignment(), "cf")) == 2 })
		// Every queue's start offset is resolved before its first pull.
		waitFor(t, 10*time.Second, tc.name+" start offsets", func() bool {
			pc.gm.mu.Lock()
			defer pc.gm.mu.Unlock()
			for mq, qs := range pc.gm.queues {
				if mq.Topic == "cf" && qs.pq.commitOffset() == 0 && tc.name == "last" {
					return false
				}
			}
			return true
		})
	}
	after := sendN(t, p, "cf", "after", 10, nil)
	for i, tc := range cases {
		want := append(append([]string{}, tc.want...), after...)
		cs[i].waitDistinct(t, len(want), 20*time.Second)
		got := cs[i].bodies()
		for _, b := range want {
			if got[b] == 0 {
				t.Errorf("%s: %s missing", tc.name, b)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: got %d distinct messages, want %d", tc.name, len(got), len(want))
		}
	}
}

// TestPushRetry: a message the handler fails comes again with
// reconsumeTimes+1 and its original topic: via %RETRY%group when the
// broker takes it back (CONSUMER_SEND_MSG_BACK, delay level 3 = 10 s),
// else locally; while it is retried locally the committed offset stays at
// it. Either way the offset then moves past it.
func TestPushRetry(t *testing.T) {
	t.Run("SendBack", func(t *testing.T) { testPushRetry(t, false) })
	t.Run("Local", func(t *testing.T) { testPushRetry(t, true) })
}

func testPushRetry(t *testing.T, local bool) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "rt", 1)
	p := startProducer(t, g)
	var (
		mu      sync.Mutex
		release bool
		times   []int32
		viaRQ   []bool
		topics  []string
	)
	c := newCollector()
	h := func(ctx context.Context, msgs []*message.MessageExt) ConsumeResult {
		m := msgs[0]
		if string(m.Body) != "m-2" {
			return c.handler(ctx, msgs)
		}
		mu.Lock()
		defer mu.Unlock()
		times = append(times, m.ReconsumeTimes)
		via := m.Property(message.PropertyRetryTopic) != ""
		viaRQ = append(viaRQ, via)
		topics = append(topics, m.Topic)
		if !release && !via {
			return ConsumeRetryLater
		}
		c.add(msgs)
		return ConsumeSuccess
	}
	pc, err := NewPushConsumer("cg-rt", pushOpts(t, g, "r", WithConsumeFrom(ConsumeFromFirst()))...)
	if err != nil {
		t.Fatal(err)
	}
	if local {
		pc.sendBackFn = func(MessageQueue, *message.MessageExt) error { return errors.New("test: no send-back") }
	}
	if err := pc.Subscribe("rt", "*", h); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close(context.Background()) })
	sendN(t, p, "rt", "m", 5, nil)
	c.waitDistinct(t, 4, 20*time.Second)
	deliveries := func() int { mu.Lock(); defer mu.Unlock(); return len(times) }
	if local {
		// The offset must wait for m-2 through several commit rounds
		// (every 200 ms) and redeliveries.
		waitFor(t, 10*time.Second, "offset 2 committed", func() bool { return committedOffset(t, g, "cg-rt", "rt", 0) == 2 })
		waitFor(t, 10*time.Second, "redeliveries", func() bool { return deliveries() >= 4 })
		if off := committedOffset(t, g, "cg-rt", "rt", 0); off > 2 {
			t.Fatalf("committed offset %d passed the retried message at 2", off)
		}
		mu.Lock()
		release = true
		mu.Unlock()
	}
	c.waitDistinct(t, 5, 30*time.Second)
	mu.Lock()
	for i, n := range times {
		if n != int32(i) || topics[i] != "rt" || viaRQ[i] != (i > 0 && !local) {
			t.Errorf("delivery %d of m-2: reconsumeTimes %d, topic %s, via %%RETRY%% %v (all: %v %v %v)", i, n, topics[i], viaRQ[i], times, topics, viaRQ)
		}
	}
	t.Logf("m-2 delivered %d times", len(times))
	mu.Unlock()
	waitFor(t, 10*time.Second, "offset 5 committed", func() bool { return committedOffset(t, g, "cg-rt", "rt", 0) == 5 })
}
