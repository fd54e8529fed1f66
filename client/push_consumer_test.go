package client

import (
	"context"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
)

// TestPushSubscribeTags: a subscription "A || B" receives exactly the
// messages tagged A or B, none tagged C or untagged.
func TestPushSubscribeTags(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "tags", 4)
	p := startProducer(t, g)
	tags := []string{"A", "B", "C", ""}
	bodies := sendN(t, p, "tags", "m", 40, func(i int) string { return tags[i%4] })

	c := newCollector()
	startPush(t, g, "cg-tags", "c1", "tags", "A || B", c.handler, WithConsumeFrom(ConsumeFromFirst()))
	c.waitDistinct(t, 20, 20*time.Second)
	// Messages after the matching ones: once they are consumed, anything
	// wrongly delivered before them would have arrived too.
	sendN(t, p, "tags", "late", 4, func(int) string { return "A" })
	c.waitDistinct(t, 24, 20*time.Second)
	got := c.bodies()
	for i, b := range bodies {
		want := tags[i%4] == "A" || tags[i%4] == "B"
		if (got[b] > 0) != want {
			t.Errorf("%s (tag %q): delivered %d times", b, tags[i%4], got[b])
		}
	}
	if len(got) != 24 {
		t.Errorf("got %d distinct messages, want 24", len(got))
	}
}

// TestPushClustering: two consumers of one group split the queues and
// together receive every message; duplicates are counted, not failed.
func TestPushClustering(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "clu", 8)
	p := startProducer(t, g)
	c1, c2 := newCollector(), newCollector()
	a := startPush(t, g, "cg-clu", "a", "clu", "*", c1.handler, WithConsumeFrom(ConsumeFromFirst()), WithRebalanceInterval(time.Hour))
	b := startPush(t, g, "cg-clu", "b", "clu", "*", c2.handler, WithConsumeFrom(ConsumeFromFirst()), WithRebalanceInterval(time.Hour))
	waitFor(t, 15*time.Second, "a split of the 8 queues", func() bool {
		qa, qb := queuesOf(a.Assignment(), "clu"), queuesOf(b.Assignment(), "clu")
		return len(qa) == 4 && len(qb) == 4 && disjoint(qa, qb)
	})
	bodies := sendN(t, p, "clu", "m", 200, nil)
	waitFor(t, 30*time.Second, "every message", func() bool { return union(c1, c2) >= len(bodies) })
	got1, got2 := c1.bodies(), c2.bodies()
	dups := 0
	for _, body := range bodies {
		n := got1[body] + got2[body]
		if n == 0 {
			t.Errorf("%s never delivered", body)
		}
		dups += max(n-1, 0)
	}
	if len(got1) == 0 || len(got2) == 0 {
		t.Errorf("one consumer got nothing: %d and %d", len(got1), len(got2))
	}
	t.Logf("a %d, b %d, duplicates %d", len(got1), len(got2), dups)
}

// TestPushBroadcasting: both consumers of a broadcasting group receive
// every message, and keep their offsets in their own files.
func TestPushBroadcasting(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "bc", 4)
	p := startProducer(t, g)
	c1, c2 := newCollector(), newCollector()
	d1, d2 := t.TempDir(), t.TempDir()
	var pcs []*PushConsumer
	for i, c := range []*collector{c1, c2} {
		dir := []string{d1, d2}[i]
		pcs = append(pcs, startPush(t, g, "cg-bc", []string{"x", "y"}[i], "bc", "*", c.handler,
			WithMessageModel(Broadcasting), WithOffsetStoreDir(dir), WithConsumeFrom(ConsumeFromFirst())))
	}
	bodies := sendN(t, p, "bc", "m", 60, nil)
	c1.waitDistinct(t, len(bodies), 20*time.Second)
	c2.waitDistinct(t, len(bodies), 20*time.Second)
	s := newLocalOffsetStore(d1, "cg-bc")
	waitFor(t, 10*time.Second, "local offsets summing to 60", func() bool {
		s.loaded, s.offsets = false, map[MessageQueue]int64{}
		sum := int64(0)
		for q := range int32(4) {
			off, _, _ := s.read(context.Background(), MessageQueue{"bc", "broker-a", q})
			sum += off
		}
		return sum == int64(len(bodies))
	})

	// x restarts on its file: it goes on after what it consumed.
	if err := pcs[0].Close(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	later := sendN(t, p, "bc", "later", 8, nil)
	c3 := newCollector()
	startPush(t, g, "cg-bc", "x2", "bc", "*", c3.handler,
		WithMessageModel(Broadcasting), WithOffsetStoreDir(d1), WithConsumeFrom(ConsumeFromFirst()))
	c3.waitDistinct(t, len(later), 20*time.Second)
	got := c3.bodies()
	for _, b := range bodies {
		if got[b] > 0 {
			t.Errorf("%s delivered again after the restart", b)
		}
	}
}

func queuesOf(qs []MessageQueue, topic string) []MessageQueue {
	var out []MessageQueue
	for _, q := range qs {
		if q.Topic == topic {
			out = append(out, q)
		}
	}
	return out
}

func disjoint(a, b []MessageQueue) bool {
	for _, q := range a {
		for _, r := range b {
			if q == r {
				return false
			}
		}
	}
	return true
}

func union(cs ...*collector) int {
	all := map[string]bool{}
	for _, c := range cs {
		for b := range c.bodies() {
			all[b] = true
		}
	}
	return len(all)
}
