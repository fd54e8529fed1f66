package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
)

func extAt(off int64, body string) *message.MessageExt {
	return &message.MessageExt{Message: message.Message{Body: []byte(body)}, QueueOffset: off}
}

// TestProcessQueueCommitOffset: the committed offset is the smallest
// unacknowledged one, however far later messages got, and the next pull
// offset once nothing is cached.
func TestProcessQueueCommitOffset(t *testing.T) {
	pq := newProcessQueue(10)
	if got := pq.commitOffset(); got != 10 {
		t.Fatalf("empty: %d, want 10", got)
	}
	msgs := []*message.MessageExt{extAt(10, "a"), extAt(11, "bb"), extAt(12, "ccc")}
	pq.add(msgs, 13)
	if got := pq.remove(msgs[1:]); got != 10 {
		t.Fatalf("10 unacknowledged: commit %d, want 10", got)
	}
	if got := pq.remove(msgs[:1]); got != 13 {
		t.Fatalf("all acknowledged: commit %d, want 13", got)
	}
	pq.add(nil, 20) // filtered messages moved the next offset
	if got := pq.commitOffset(); got != 20 {
		t.Fatalf("after filtered pull: %d, want 20", got)
	}
}

// TestProcessQueueFull: count, bytes and span each pause pulling.
func TestProcessQueueFull(t *testing.T) {
	cs := defaultConsumerConfig("cg-full")
	cs.maxMsgs, cs.maxBytes, cs.maxSpan = 3, 10, 5
	pq := newProcessQueue(0)
	pq.add([]*message.MessageExt{extAt(0, "a"), extAt(1, "b")}, 2)
	if pq.full(&cs) {
		t.Fatal("2 small messages: full")
	}
	pq.add([]*message.MessageExt{extAt(2, "c"), extAt(3, "d")}, 4)
	if !pq.full(&cs) {
		t.Fatal("4 messages over a threshold of 3: not full")
	}
	pq = newProcessQueue(0)
	pq.add([]*message.MessageExt{extAt(0, "0123456789x")}, 1)
	if !pq.full(&cs) {
		t.Fatal("11 bytes over 10: not full")
	}
	pq = newProcessQueue(0)
	pq.add([]*message.MessageExt{extAt(0, "a"), extAt(6, "b")}, 7)
	if !pq.full(&cs) {
		t.Fatal("span 6 over 5: not full")
	}
	pq.remove([]*message.MessageExt{extAt(0, "a")})
	if pq.full(&cs) {
		t.Fatal("after the oldest was acknowledged: still full")
	}
}

// TestPushFlowControl: with handlers stuck, a queue's cache stops growing
// at the message threshold plus one pull batch, even while more messages
// arrive; once the handlers are released everything is consumed.
func TestPushFlowControl(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "fc", 1)
	p := startProducer(t, g)
	release := make(chan struct{})
	var once sync.Once
	c := newCollector()
	h := func(ctx context.Context, msgs []*message.MessageExt) ConsumeResult {
		<-release
		return c.handler(ctx, msgs)
	}
	pc := startPush(t, g, "cg-fc", "fc", "fc", "*", h, WithConsumeFrom(ConsumeFromFirst()),
		WithPullThresholds(10, 1<<20, 2000), WithPullBatchSize(8), WithConsumeGoroutines(2))
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	cached := func() int {
		pc.gm.mu.Lock()
		defer pc.gm.mu.Unlock()
		n := 0
		for mq, qs := range pc.gm.queues {
			if mq.Topic == "fc" {
				qs.pq.mu.Lock()
				n += len(qs.pq.msgs)
				qs.pq.mu.Unlock()
			}
		}
		return n
	}
	full := func() bool {
		pc.gm.mu.Lock()
		defer pc.gm.mu.Unlock()
		for mq, qs := range pc.gm.queues {
			if mq.Topic == "fc" && qs.pq.full(pc.gm.cfg) {
				return true
			}
		}
		return false
	}
	sendN(t, p, "fc", "a", 40, nil)
	waitFor(t, 10*time.Second, "the process queue to fill", full)
	// A long poll would wake at once for these if the queue were pulled.
	sendN(t, p, "fc", "b", 40, nil)
	pc.gm.mu.Lock()
	pq := pc.gm.queues[MessageQueue{"fc", "broker-a", 0}].pq
	pc.gm.mu.Unlock()
	pq.mu.Lock()
	n := len(pq.msgs)
	pq.mu.Unlock()
	if n > 10+8 {
		t.Fatalf("%d messages cached, over the threshold 10 plus one batch of 8", n)
	}
	once.Do(func() { close(release) })
	c.waitDistinct(t, 80, 20*time.Second)
	waitFor(t, 5*time.Second, "an empty cache", func() bool { return cached() == 0 })
}

// TestPushConsumeBatchSize: a handler gets batches of at most the consume
// batch size, each of one queue, in queue order.
func TestPushConsumeBatchSize(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "bs", 2)
	p := startProducer(t, g)
	sendN(t, p, "bs", "m", 40, nil)
	var mu sync.Mutex
	var sizes []int
	c := newCollector()
	h := func(ctx context.Context, msgs []*message.MessageExt) ConsumeResult {
		mu.Lock()
		sizes = append(sizes, len(msgs))
		for i := 1; i < len(msgs); i++ {
			if msgs[i].QueueID != msgs[0].QueueID || msgs[i].QueueOffset != msgs[i-1].QueueOffset+1 {
				t.Errorf("batch mixes queues or skips: %d/%d after %d/%d", msgs[i].QueueID, msgs[i].QueueOffset,
					msgs[i-1].QueueID, msgs[i-1].QueueOffset)
			}
		}
		mu.Unlock()
		return c.handler(ctx, msgs)
	}
	startPush(t, g, "cg-bs", "bs", "bs", "*", h, WithConsumeFrom(ConsumeFromFirst()), WithConsumeBatchSize(4))
	c.waitDistinct(t, 40, 20*time.Second)
	mu.Lock()
	defer mu.Unlock()
	multi := false
	for _, n := range sizes {
		if n > 4 {
			t.Errorf("batch of %d, over 4", n)
		}
		multi = multi || n > 1
	}
	if !multi {
		t.Errorf("no batch of more than one message: %v", sizes)
	}
}
