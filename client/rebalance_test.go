package client

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
)

func TestAllocateStrategies(t *testing.T) {
	var qs []MessageQueue
	for i := range int32(8) {
		qs = append(qs, MessageQueue{"t", "room1@b", i})
	}
	for i := range int32(3) {
		qs = append(qs, MessageQueue{"t", "room2@c", i})
	}
	cids := []string{"c1", "c2", "c3"}
	strategies := map[string]AllocateStrategy{
		"avg": AllocateAveragely, "circle": AllocateAveragelyByCircle, "hash": AllocateConsistentHash(0),
	}
	for name, s := range strategies {
		seen := map[MessageQueue]int{}
		for _, c := range cids {
			for _, q := range s("g", c, qs, cids) {
				seen[q]++
			}
		}
		for _, q := range qs {
			if seen[q] != 1 {
				t.Errorf("%s: %s allocated %d times", name, q, seen[q])
			}
		}
	}
	if got := AllocateAveragely("g", "c1", qs, cids); len(got) != 4 || got[0] != qs[0] || got[3] != qs[3] {
		t.Errorf("avg c1 = %v", got)
	}
	if got := AllocateAveragelyByCircle("g", "c2", qs, cids); len(got) != 4 || got[0] != qs[1] || got[1] != qs[4] {
		t.Errorf("circle c2 = %v", got)
	}
	room := AllocateMachineRoom("room2")
	var all []MessageQueue
	for _, c := range cids {
		got := room("g", c, qs, cids)
		if len(got) != 1 {
			t.Errorf("machine room %s = %v", c, got)
		}
		all = append(all, got...)
	}
	slices.SortFunc(all, compareQueues)
	if !slices.Equal(all, qs[8:]) {
		t.Errorf("machine room allocated %v, want %v", all, qs[8:])
	}
	if got := AllocateAveragely("g", "stranger", qs, cids); got != nil {
		t.Errorf("a consumer not in the list got %v", got)
	}
	// Consistent hash: removing a consumer moves only its queues.
	h := AllocateConsistentHash(10)
	before := h("g", "c1", qs, cids)
	after := h("g", "c1", qs, cids[:2])
	for _, q := range before {
		if !slices.Contains(after, q) {
			t.Errorf("consistent hash moved %s away from c1 when c3 left", q)
		}
	}
}

// TestRebalanceJoinLeave: three consumers join and then leave a group on
// a topic of 8 queues while a producer sends. After every change the
// consumers' queues settle to a partition of the 8 (each queue owned by
// one consumer); every message sent is consumed.
func TestRebalanceJoinLeave(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "rb", 8)
	p := startProducer(t, g)

	var sentMu sync.Mutex
	var sent []string
	stop := make(chan struct{})
	var sending sync.WaitGroup
	sending.Add(1)
	go func() {
		defer sending.Done()
		ctx := context.Background()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			m := newMsg("rb", fmt.Sprintf("m-%d", i))
			if _, err := p.Send(ctx, m); err != nil {
				t.Errorf("send: %v", err)
				return
			}
			sentMu.Lock()
			sent = append(sent, string(m.Body))
			sentMu.Unlock()
			ticker := time.NewTimer(2 * time.Millisecond)
			select {
			case <-stop:
				ticker.Stop()
				return
			case <-ticker.C:
			}
		}
	}()

	c := newCollector()
	var overlaps atomic.Int64
	var activeMu sync.Mutex
	active := map[MessageQueue]string{}
	handler := func(name string) MessageHandler {
		return func(ctx context.Context, msgs []*message.MessageExt) ConsumeResult {
			mq := MessageQueue{msgs[0].Topic, "broker-a", msgs[0].QueueID}
			activeMu.Lock()
			if o, ok := active[mq]; ok && o != name {
				overlaps.Add(1)
			}
			active[mq] = name
			activeMu.Unlock()
			c.add(msgs)
			activeMu.Lock()
			delete(active, mq)
			activeMu.Unlock()
			return ConsumeSuccess
		}
	}
	consumers := map[string]*PushConsumer{}
	settle := func(what string) {
		t.Helper()
		waitFor(t, 20*time.Second, what, func() bool { return partition(consumers, "rb", 8) })
		// Traffic during every phase: 50 more messages sent.
		sentMu.Lock()
		n := len(sent)
		sentMu.Unlock()
		waitFor(t, 20*time.Second, what+" traffic", func() bool {
			sentMu.Lock()
			defer sentMu.Unlock()
			return len(sent) >= n+50
		})
		if !partition(consumers, "rb", 8) {
			t.Fatalf("%s: queues no longer partitioned", what)
		}
		t.Logf("%s: settled", what)
	}
	join := func(name string) {
		consumers[name] = startPush(t, g, "cg-rb", name, "rb", "*", handler(name), WithConsumeFrom(ConsumeFromFirst()))
	}
	leave := func(name string) {
		if err := consumers[name].Close(testCtx(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		delete(consumers, name)
	}
	join("c1")
	settle("c1 alone")
	join("c2")
	settle("c1+c2")
	join("c3")
	settle("c1+c2+c3")
	leave("c1")
	settle("c2+c3")
	leave("c2")
	settle("c3 alone")
	close(stop)
	sending.Wait()
	sentMu.Lock()
	all := slices.Clone(sent)
	sentMu.Unlock()
	waitFor(t, 30*time.Second, "every message consumed", func() bool {
		got := c.bodies()
		for _, b := range all {
			if got[b] == 0 {
				return false
			}
		}
		return true
	})
	dups := 0
	for _, n := range c.bodies() {
		dups += n - 1
	}
	t.Logf("sent %d, duplicates %d, concurrent handlers of one queue on two consumers %d", len(all), dups, overlaps.Load())
}

// partition reports whether the consumers' queues of topic are pairwise
// disjoint, together all n, and each consumer has its average share.
func partition(cs map[string]*PushConsumer, topic string, n int) bool {
	seen := map[MessageQueue]bool{}
	for _, pc := range cs {
		mine := queuesOf(pc.Assignment(), topic)
		if len(mine) < n/len(cs) {
			return false // not yet its share (AVG: 8, 4+4, 3+3+2)
		}
		for _, q := range mine {
			if seen[q] {
				return false
			}
			seen[q] = true
		}
	}
	return len(seen) == n
}
