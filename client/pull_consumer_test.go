package client

import (
	"context"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
)

func startPull(t testing.TB, g *brokertest.Group, group, name string, setup func(*PullConsumer) error, opts ...PullConsumerOpt) *PullConsumer {
	t.Helper()
	pc, err := NewPullConsumer(group, pullOpts(t, g, name, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(pc); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close(context.Background()) })
	return pc
}

// pollUntil polls until n distinct bodies came, returning every message.
func pollUntil(t testing.TB, pc *PullConsumer, n int) []*message.MessageExt {
	t.Helper()
	ctx := testCtx(t, 20*time.Second)
	var out []*message.MessageExt
	seen := map[string]bool{}
	for len(seen) < n {
		msgs, err := pc.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d: %v", len(seen), err)
		}
		for _, m := range msgs {
			seen[string(m.Body)] = true
		}
		out = append(out, msgs...)
	}
	return out
}

// TestPullAssignPollCommitSeek: an assigned pull consumer polls every
// message in queue order, commits its positions, seeks back by offset and
// by timestamp, and a new consumer of the group starts at the commit.
func TestPullAssignPollCommitSeek(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "pl", 2)
	p := startProducer(t, g)
	sendN(t, p, "pl", "a", 20, nil)
	q0, q1 := MessageQueue{"pl", "broker-a", 0}, MessageQueue{"pl", "broker-a", 1}
	pc := startPull(t, g, "cg-pl", "p1", func(pc *PullConsumer) error { return pc.Assign(q0, q1) }, WithConsumeFrom(ConsumeFromFirst()))
	if got := pc.Assignment(); len(got) != 2 {
		t.Fatalf("assignment %v", got)
	}
	msgs := pollUntil(t, pc, 20)
	next := map[int32]int64{}
	for _, m := range msgs {
		if m.QueueOffset != next[m.QueueID] {
			t.Fatalf("queue %d: offset %d polled, want %d", m.QueueID, m.QueueOffset, next[m.QueueID])
		}
		next[m.QueueID]++
	}
	if err := pc.Commit(testCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	// The broker answers UPDATE_CONSUMER_OFFSET before raft commits it:
	// wait for the value to show.
	for _, q := range []int32{0, 1} {
		waitFor(t, 5*time.Second, "the commit to show", func() bool {
			return committedOffset(t, g, "cg-pl", "pl", q) == next[q]
		})
	}

	// Seek q0 to 3: the next batch from q0 starts there.
	if err := pc.Seek(q0, 3); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 10*time.Second)
	m, err := pc.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m[0].QueueID != 0 || m[0].QueueOffset != 3 {
		t.Fatalf("after seek polled queue %d offset %d", m[0].QueueID, m[0].QueueOffset)
	}
	// Seek by timestamp: messages sent after t come next.
	cut := time.Now()
	waitFor(t, time.Second, "the clock to move on", func() bool { return time.Since(cut) > 5*time.Millisecond })
	later := sendN(t, p, "pl", "b", 4, nil)
	if err := pc.SeekTimestamp(ctx, q0, cut); err != nil {
		t.Fatal(err)
	}
	if err := pc.SeekTimestamp(ctx, q1, cut); err != nil {
		t.Fatal(err)
	}
	got := pollUntil(t, pc, len(later))
	for _, m := range got {
		if string(m.Body[:2]) != "b-" {
			t.Errorf("after seek to %v polled %s", cut, m.Body)
		}
	}
	if err := pc.Seek(MessageQueue{"pl", "broker-a", 7}, 0); err == nil {
		t.Error("seek of an unassigned queue succeeded")
	}
	if err := pc.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// A new consumer of the group resumes at the commit: nothing is left.
	sendN(t, p, "pl", "c", 2, nil)
	pc2 := startPull(t, g, "cg-pl", "p2", func(pc *PullConsumer) error { return pc.Assign(q0, q1) }, WithConsumeFrom(ConsumeFromFirst()))
	for _, m := range pollUntil(t, pc2, 2) {
		if string(m.Body[:2]) != "c-" {
			t.Errorf("resumed consumer polled %s", m.Body)
		}
	}
}

// TestPullSubscribeRebalance: two subscribing pull consumers split four
// queues and together poll every message.
func TestPullSubscribeRebalance(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "pr", 4)
	p := startProducer(t, g)
	sub := func(pc *PullConsumer) error { return pc.Subscribe("pr", "*") }
	a := startPull(t, g, "cg-pr", "pa", sub, WithConsumeFrom(ConsumeFromFirst()))
	b := startPull(t, g, "cg-pr", "pb", sub, WithConsumeFrom(ConsumeFromFirst()))
	waitFor(t, 15*time.Second, "a split", func() bool {
		qa, qb := a.Assignment(), b.Assignment()
		return len(qa) == 2 && len(qb) == 2 && disjoint(qa, qb)
	})
	bodies := sendN(t, p, "pr", "m", 40, nil)
	seen := map[string]bool{}
	ctx := testCtx(t, 20*time.Second)
	for len(seen) < len(bodies) {
		for _, pc := range []*PullConsumer{a, b} {
			pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			msgs, err := pc.Poll(pctx)
			cancel()
			if err != nil && ctx.Err() != nil {
				t.Fatalf("polled %d of %d: %v", len(seen), len(bodies), err)
			}
			for _, m := range msgs {
				seen[string(m.Body)] = true
			}
		}
	}
}
