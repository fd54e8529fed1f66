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

// collector records what a handler got, by body.
type collector struct {
	mu     sync.Mutex
	got    map[string]int // body → deliveries
	msgs   []*message.MessageExt
	change chan struct{}
}

func newCollector() *collector {
	return &collector{got: map[string]int{}, change: make(chan struct{}, 1)}
}

func (c *collector) handler(_ context.Context, msgs []*message.MessageExt) ConsumeResult {
	c.add(msgs)
	return ConsumeSuccess
}

func (c *collector) add(msgs []*message.MessageExt) {
	c.mu.Lock()
	for _, m := range msgs {
		c.got[string(m.Body)]++
		c.msgs = append(c.msgs, m)
	}
	c.mu.Unlock()
	select {
	case c.change <- struct{}{}:
	default:
	}
}

// bodies returns a copy of the delivery counts.
func (c *collector) bodies() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.got))
	for k, v := range c.got {
		out[k] = v
	}
	return out
}

func (c *collector) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// waitDistinct waits until at least n distinct bodies arrived.
func (c *collector) waitDistinct(t testing.TB, n int, d time.Duration) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for c.distinct() < n {
		select {
		case <-c.change:
		case <-deadline.C:
			t.Fatalf("got %d distinct messages, want %d", c.distinct(), n)
		}
	}
}

// waitFor waits until cond holds, re-checking when c changes or every
// 50 ms.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// consumerOpts are the options every test consumer uses: short intervals
// so rebalances happen within a test.
func consumerOpts(t testing.TB, g *brokertest.Group, name string) []ConsumerOpt {
	return []ConsumerOpt{WithNameServers(g.NSAddr), WithLogger(testLogger(t)), WithInstanceName(name),
		WithRebalanceInterval(time.Second), WithSuspendTimeout(2 * time.Second)}
}

// pushOpts are consumerOpts, short commit and local retry intervals so
// they happen within a test, then extra.
func pushOpts(t testing.TB, g *brokertest.Group, name string, extra ...PushConsumerOpt) []PushConsumerOpt {
	var out []PushConsumerOpt
	for _, o := range consumerOpts(t, g, name) {
		out = append(out, o)
	}
	out = append(out, WithCommitInterval(200*time.Millisecond), WithLocalRetryDelay(200*time.Millisecond))
	return append(out, extra...)
}

// pullOpts are consumerOpts, then extra.
func pullOpts(t testing.TB, g *brokertest.Group, name string, extra ...PullConsumerOpt) []PullConsumerOpt {
	var out []PullConsumerOpt
	for _, o := range consumerOpts(t, g, name) {
		out = append(out, o)
	}
	return append(out, extra...)
}

// startPush starts a push consumer of group on topic/expr into c; it is
// closed at the end of the test unless the test closed it.
func startPush(t testing.TB, g *brokertest.Group, group, name, topic, expr string, h MessageHandler, opts ...PushConsumerOpt) *PushConsumer {
	t.Helper()
	pc, err := NewPushConsumer(group, pushOpts(t, g, name, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, expr, h); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(testCtx(t, 15*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pc.Close(testCtx(t, 10*time.Second)); err != nil {
			t.Errorf("close consumer: %v", err)
		}
	})
	return pc
}

// sendN sends n messages "<prefix>-i" to topic, tagged by tag(i) when
// tag is not nil, and returns the bodies.
func sendN(t testing.TB, p *Producer, topic, prefix string, n int, tag func(int) string) []string {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	var bodies []string
	for i := range n {
		m := newMsg(topic, fmt.Sprintf("%s-%d", prefix, i))
		if tag != nil {
			m.SetTags(tag(i))
		}
		if _, err := p.Send(ctx, m); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		bodies = append(bodies, string(m.Body))
	}
	return bodies
}
