package client

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
)

// orderChecker records, per queue, the offsets handled, and fails on a
// handler running on a queue another handler (of any consumer) is on.
type orderChecker struct {
	t      *testing.T
	mu     sync.Mutex
	active map[int32]string
	last   map[int32]int64
	c      *collector
	// failOnce makes the handler ask for a retry of these bodies once.
	failOnce map[string]bool
	retried  map[string]int32 // body → reconsumeTimes at redelivery
}

func newOrderChecker(t *testing.T) *orderChecker {
	return &orderChecker{t: t, active: map[int32]string{}, last: map[int32]int64{}, c: newCollector(),
		failOnce: map[string]bool{}, retried: map[string]int32{}}
}

func (o *orderChecker) handler(name string) MessageHandler {
	return func(ctx context.Context, msgs []*message.MessageExt) ConsumeResult {
		q := msgs[0].QueueID
		o.mu.Lock()
		if other, busy := o.active[q]; busy {
			o.t.Errorf("queue %d handled by %s while %s is on it", q, name, other)
		}
		o.active[q] = name
		o.mu.Unlock()
		defer func() {
			o.mu.Lock()
			delete(o.active, q)
			o.mu.Unlock()
		}()
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, m := range msgs {
			b := string(m.Body)
			if o.failOnce[b] {
				delete(o.failOnce, b)
				return ConsumeRetryLater
			}
			if _, ok := o.retried[b]; ok {
				o.retried[b] = m.ReconsumeTimes
			}
			if last, ok := o.last[q]; ok && m.QueueOffset != last+1 && m.QueueOffset > last {
				o.t.Errorf("queue %d: offset %d after %d (skipped)", q, m.QueueOffset, last)
			}
			if last, ok := o.last[q]; !ok || m.QueueOffset > last {
				o.last[q] = m.QueueOffset
			}
		}
		o.c.add(msgs)
		return ConsumeSuccess
	}
}

// TestPushOrderly: an orderly consumer handles each queue one batch at a
// time in offset order; a retried message is redelivered in place (with
// reconsumeTimes 1) before anything after it; a second orderly consumer
// joining and the first leaving hand queues over under broker locks,
// never consuming a queue together, and every message is consumed.
func TestPushOrderly(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "ord", 4)
	p := startProducer(t, g)
	o := newOrderChecker(t)
	o.failOnce["m-5"] = true
	o.retried["m-5"] = -1
	opts := []PushConsumerOpt{WithOrderly(), WithConsumeFrom(ConsumeFromFirst()), WithOrderlySuspend(100 * time.Millisecond), WithConsumeBatchSize(2)}
	a, err := NewPushConsumer("cg-ord", pushOpts(t, g, "oa", opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Subscribe("ord", "*", o.handler("a")); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	sendN(t, p, "ord", "m", 100, nil)
	o.c.waitDistinct(t, 100, 20*time.Second)
	o.mu.Lock()
	if rt := o.retried["m-5"]; rt != 1 {
		t.Errorf("m-5 redelivered with reconsumeTimes %d, want 1", rt)
	}
	o.mu.Unlock()

	b := startPush(t, g, "cg-ord", "ob", "ord", "*", o.handler("b"), opts...)
	waitFor(t, 20*time.Second, "b to lock its share", func() bool {
		return len(queuesOf(b.Assignment(), "ord")) == 2 && len(queuesOf(a.Assignment(), "ord")) == 2
	})
	more := make(chan struct{})
	go func() {
		defer close(more)
		ctx := context.Background()
		for i := 100; i < 300; i++ {
			if _, err := p.Send(ctx, newMsg("ord", fmt.Sprintf("m-%d", i))); err != nil {
				t.Errorf("send: %v", err)
				return
			}
		}
	}()
	o.c.waitDistinct(t, 150, 20*time.Second)
	if err := a.Close(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "b to lock every queue", func() bool { return len(queuesOf(b.Assignment(), "ord")) == 4 })
	<-more
	o.c.waitDistinct(t, 300, 30*time.Second)
}
