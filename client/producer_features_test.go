package client

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
)

// TestProducerFeatures runs against one group: compression over the
// threshold, the hash selector, delay level and deliver-at properties.
func TestProducerFeatures(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	p := startProducer(t, g)
	t.Run("Compression", func(t *testing.T) { testCompression(t, g, p) })
	t.Run("HashSelector", func(t *testing.T) { testHashSelector(t, g) })
	t.Run("DelayAndDeliverAt", func(t *testing.T) { testDelayProperties(t, g, p) })
}

func testCompression(t *testing.T, g *brokertest.Group, p *Producer) {
	createTopic(t, g, "zip", 1)
	ctx := testCtx(t, 20*time.Second)
	big := bytes.Repeat([]byte("raftmq compresses bodies over 4 KiB. "), 200) // 7400 bytes
	if _, err := p.Send(ctx, &message.Message{Topic: "zip", Body: big}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, newMsg("zip", "small")); err != nil {
		t.Fatal(err)
	}
	leader := g.WaitLeader(10 * time.Second)
	waitMaxOffset(t, g, leader, "zip", 0, 2)
	got := pullRaw(t, g, leader, "zip", 0, 0)
	if len(got) != 2 {
		t.Fatalf("pulled %d messages", len(got))
	}
	if got[0].SysFlag&message.SysFlagCompressed == 0 || len(got[0].Body) >= len(big) {
		t.Fatalf("big body stored with sysFlag %d, %d bytes (sent %d)", got[0].SysFlag, len(got[0].Body), len(big))
	}
	plain, err := message.Decompress(got[0].Body, 1<<20)
	if err != nil || !bytes.Equal(plain, big) {
		t.Fatalf("decompressed body differs (err %v)", err)
	}
	if got[1].SysFlag&message.SysFlagCompressed != 0 || string(got[1].Body) != "small" {
		t.Fatalf("small body stored with sysFlag %d: %q", got[1].SysFlag, got[1].Body)
	}
}

func testHashSelector(t *testing.T, g *brokertest.Group) {
	createTopic(t, g, "ordered", 8)
	p := startProducer(t, g, WithSelector(HashSelector(nil)))
	ctx := testCtx(t, 20*time.Second)
	queues := map[string]map[int32]bool{}
	lastOffset := map[int32]int64{}
	for i := range 40 {
		key := fmt.Sprintf("order-%d", i%5)
		m := newMsg("ordered", fmt.Sprintf("%s step %d", key, i/5))
		m.SetProperty(message.PropertyShardingKey, key)
		res, err := p.Send(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if queues[key] == nil {
			queues[key] = map[int32]bool{}
		}
		queues[key][res.Queue.QueueID] = true
		if prev, ok := lastOffset[res.Queue.QueueID]; ok && res.QueueOffset <= prev {
			t.Fatalf("queue %d offsets not increasing: %d after %d", res.Queue.QueueID, res.QueueOffset, prev)
		}
		lastOffset[res.Queue.QueueID] = res.QueueOffset
	}
	for key, qs := range queues {
		if len(qs) != 1 {
			t.Fatalf("key %s went to queues %v", key, qs)
		}
	}
	if len(lastOffset) < 2 {
		t.Fatalf("5 keys all hashed to one queue: %v", lastOffset)
	}
}

func testDelayProperties(t *testing.T, g *brokertest.Group, p *Producer) {
	createTopic(t, g, "timers", 1)
	ctx := testCtx(t, 20*time.Second)
	start := time.Now()
	m := newMsg("timers", "later")
	m.SetDelayLevel(1) // 1 s with the default levels
	if _, err := p.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(700 * time.Millisecond).Truncate(time.Millisecond)
	m2 := newMsg("timers", "at")
	SetDeliverAt(m2, at)
	if got, ok := DeliverAt(m2); !ok || !got.Equal(at) {
		t.Fatalf("DeliverAt = %v %v, want %v", got, ok, at)
	}
	if _, err := p.Send(ctx, m2); err != nil {
		t.Fatal(err)
	}
	leader := g.WaitLeader(10 * time.Second)
	// The broker parks both until they are due, then delivers them to
	// their real topic: neither may be there early.
	seen := map[string]time.Duration{}
	g.Eventually(10*time.Second, func() error {
		for _, s := range pullRaw(t, g, leader, "timers", 0, 0) {
			if _, ok := seen[s.UniqKey()]; !ok {
				seen[s.UniqKey()] = time.Since(start)
			}
		}
		if len(seen) < 2 {
			return fmt.Errorf("%d of 2 delayed messages delivered", len(seen))
		}
		return nil
	})
	if d := seen[m.UniqKey()]; d < 950*time.Millisecond {
		t.Fatalf("delay level 1 message delivered after %v, want >= 1s", d)
	}
	if d := seen[m2.UniqKey()]; d < at.Sub(start)-50*time.Millisecond {
		t.Fatalf("timer message delivered after %v, due after %v", d, at.Sub(start))
	}
}
