package integration

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/raftmq/raftmq/remoting"
)

func newOfficialProducer(t *testing.T, nsAddr, group string, extra ...producer.Option) rocketmq.Producer {
	t.Helper()
	rlog.SetLogLevel("error")
	p, err := rocketmq.NewProducer(append([]producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{nsAddr})),
		producer.WithGroupName(group),
		producer.WithInstanceName(fmt.Sprintf("%s-%d", group, time.Now().UnixNano())),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5 * time.Second),
	}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// startOfficialConsumer starts an official push consumer of group (a fresh
// instance, from the first offset, plus extra options) on topic under sel,
// calling fn; the caller shuts it down.
func startOfficialConsumer(t *testing.T, ns, group, topic string, sel consumer.MessageSelector,
	fn func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error), extra ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	opts := append([]consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName(group),
		consumer.WithInstance(fmt.Sprintf("%s-%d", group, time.Now().UnixNano())),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, extra...)
	c, err := rocketmq.NewPushConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, sel, fn); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// consumeAll runs an official push consumer (clustering, from the first
// offset) on topic until want(idx) has seen every index or d passes; it
// returns the messages by their "idx" property.
func consumeAll(t *testing.T, nsAddr, topic, group string, want map[int]bool, d time.Duration, extra ...consumer.Option) map[int]*primitive.MessageExt {
	t.Helper()
	return consumeSelected(t, nsAddr, topic, group, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, want, d, extra...)
}

// consumeSelected is consumeAll with a subscription selector.
func consumeSelected(t *testing.T, nsAddr, topic, group string, sel consumer.MessageSelector, want map[int]bool, d time.Duration, extra ...consumer.Option) map[int]*primitive.MessageExt {
	t.Helper()
	var mu sync.Mutex
	got := map[int]*primitive.MessageExt{}
	done := make(chan struct{})
	var closed atomic.Bool
	c := startOfficialConsumer(t, nsAddr, group, topic, sel,
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				idx, err := strconv.Atoi(m.GetProperty("idx"))
				if err != nil {
					t.Errorf("message without idx: %v", m)
					continue
				}
				got[idx] = m
			}
			complete := true
			for i := range want {
				if got[i] == nil {
					complete = false
					break
				}
			}
			if complete && closed.CompareAndSwap(false, true) {
				close(done)
			}
			return consumer.ConsumeSuccess, nil
		}, append([]consumer.Option{consumer.WithConsumeMessageBatchMaxSize(32)}, extra...)...)
	defer c.Shutdown()
	select {
	case <-done:
	case <-time.After(d):
	}
	mu.Lock()
	defer mu.Unlock()
	out := make(map[int]*primitive.MessageExt, len(got))
	for k, v := range got {
		out[k] = v
	}
	return out
}

func e2eMessage(topic string, i int) *primitive.Message {
	m := primitive.NewMessage(topic, []byte("body-"+strconv.Itoa(i)))
	m.WithTag("T" + strconv.Itoa(i%3))
	m.WithKeys([]string{"k" + strconv.Itoa(i)})
	m.WithProperty("idx", strconv.Itoa(i))
	return m
}

// sendConcurrently sync-sends messages 0..n-1 from workers goroutines and
// returns the indexes that were acknowledged.
func sendConcurrently(t *testing.T, p rocketmq.Producer, topic string, n, workers int) map[int]bool {
	t.Helper()
	var mu sync.Mutex
	acked := map[int]bool{}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				res, err := p.SendSync(context.Background(), e2eMessage(topic, i))
				if err != nil || res.Status != primitive.SendOK {
					t.Errorf("send %d: %v %v", i, res, err)
					continue
				}
				mu.Lock()
				acked[i] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return acked
}

// TestOfficialClientProduceConsumeThroughCluster: the official Go client
// sync-sends 10k messages to a 3-process group and its push consumer gets
// every one back with body, tag, keys and properties intact.
func TestOfficialClientProduceConsumeThroughCluster(t *testing.T) {
	c := startCluster(t)
	p := newOfficialProducer(t, c.nsAddr, "e2e-producer")
	const n = 10000
	start := time.Now()
	acked := sendConcurrently(t, p, "E2E", n, 16)
	t.Logf("sent %d messages in %v", len(acked), time.Since(start))
	if len(acked) != n {
		t.Fatalf("%d of %d sends acknowledged", len(acked), n)
	}
	start = time.Now()
	got := consumeAll(t, c.nsAddr, "E2E", "e2e-group", acked, 90*time.Second)
	t.Logf("consumed %d messages in %v", len(got), time.Since(start))
	for i := 0; i < n; i++ {
		m := got[i]
		if m == nil {
			t.Fatalf("message %d not consumed (%d of %d)", i, len(got), n)
		}
		if string(m.Body) != "body-"+strconv.Itoa(i) || m.GetTags() != "T"+strconv.Itoa(i%3) || m.GetKeys() != "k"+strconv.Itoa(i) {
			t.Fatalf("message %d altered: body %q tags %q keys %q", i, m.Body, m.GetTags(), m.GetKeys())
		}
	}
}

// TestOfficialClientSurvivesLeaderKill: kill -9 the leader during a
// continuous produce; every acknowledged message is consumed afterwards,
// and the restarted node catches up to identical queue offsets.
func TestOfficialClientSurvivesLeaderKill(t *testing.T) {
	c := startCluster(t)
	p := newOfficialProducer(t, c.nsAddr, "kill-producer")
	const topic = "KILL"

	var mu sync.Mutex
	acked := map[int]bool{}
	var lastOK, firstOKAfterKill, killedAt atomic.Int64
	var i atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				idx := int(i.Add(1) - 1)
				sentAt := time.Now().UnixNano()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				res, err := p.SendSync(ctx, e2eMessage(topic, idx))
				cancel()
				if err != nil || res.Status != primitive.SendOK {
					time.Sleep(10 * time.Millisecond) // a failing send returns at once; don't spin
					continue
				}
				now := time.Now().UnixNano()
				mu.Lock()
				acked[idx] = true
				mu.Unlock()
				lastOK.Store(now)
				// Only a send started after the kill proves the client
				// found the new leader; one in flight may land before.
				if k := killedAt.Load(); k != 0 && sentAt > k {
					firstOKAfterKill.CompareAndSwap(0, now)
				}
			}
		}()
	}
	waitFor(t, 20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 500 })
	leader := c.waitLeader(5 * time.Second)
	beforeKill := lastOK.Load()
	killedAt.Store(time.Now().UnixNano())
	c.kill(leader)
	t.Logf("killed leader n%d", leader+1)
	waitFor(t, 60*time.Second, func() bool { return firstOKAfterKill.Load() != 0 })
	gap := time.Duration(firstOKAfterKill.Load() - beforeKill)
	t.Logf("official client unavailability window after kill -9 of the leader: %v", gap)
	newLeader := c.waitLeader(5*time.Second, leader)
	t.Logf("new leader n%d", newLeader+1)
	// Keep producing a little at the new leader, then stop.
	after := len(snapshotAcked(&mu, acked))
	waitFor(t, 60*time.Second, func() bool { return len(snapshotAcked(&mu, acked)) >= after+200 })
	close(stop)
	wg.Wait()
	final := snapshotAcked(&mu, acked)

	got := consumeAll(t, c.nsAddr, topic, "kill-group", final, 90*time.Second)
	lost := 0
	for idx := range final {
		if got[idx] == nil {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged messages were not consumed", lost, len(final))
	}
	t.Logf("all %d acknowledged messages consumed", len(final))

	// The killed node restarts and catches up.
	c.start(leader)
	live := []int{0, 1, 2}
	waitFor(t, 30*time.Second, func() bool {
		ref, err := c.maxOffsets(newLeader, topic, 4)
		if err != nil {
			return false
		}
		for _, n := range live {
			got, err := c.maxOffsets(n, topic, 4)
			if err != nil || fmt.Sprint(got) != fmt.Sprint(ref) {
				return false
			}
		}
		return true
	})
}

func snapshotAcked(mu *sync.Mutex, m map[int]bool) map[int]bool {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[int]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBrokerBadInput: garbage, an oversized frame and an unknown code on
// raw sockets; the broker answers or closes that connection and keeps
// serving everyone else.
func TestBrokerBadInput(t *testing.T) {
	c := startCluster(t)
	addr := c.nodes[0].addr
	for name, payload := range map[string][]byte{
		"garbage":   []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"oversized": {0x10, 0x00, 0x00, 0x00, 0, 0, 0, 2, '{', '}'},
		"negative":  {0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0},
		"bad json":  append([]byte{0, 0, 0, 9, 0, 0, 0, 5}, []byte("{nope")...),
	} {
		raw, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = raw.Write(payload)
		_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := raw.Read(make([]byte, 64)); err == nil {
			t.Errorf("%s: connection answered %d bytes instead of closing", name, n)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("%s: connection neither answered nor closed", name)
		}
		raw.Close()
	}
	resp := waitInvoke(t, c.admin, addr, remoting.NewRequest(4242, nil, nil), 5*time.Second)
	if resp.Code != remoting.ResRequestCodeNotSupported || resp.Remark == "" {
		t.Fatalf("unknown code answered %d %q", resp.Code, resp.Remark)
	}
	if _, err := c.runtime(0); err != nil {
		t.Fatalf("broker unhealthy after bad input: %v", err)
	}
}
