package client

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
)

func newMsg(topic, body string) *message.Message {
	return &message.Message{Topic: topic, Body: []byte(body)}
}

// TestProducerSendKinds sends sync, async, oneway and batch to one queue
// (a one-queue topic) and checks the offsets the results report and what
// the queue holds afterwards.
func TestProducerSendKinds(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "kinds", 1)
	p := startProducer(t, g)
	ctx := testCtx(t, 30*time.Second)

	m := newMsg("kinds", "sync-0")
	m.SetTags("TagA")
	m.SetKeys([]string{"k1", "k2"})
	m.SetProperty("color", "blue")
	res, err := p.Send(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != SendOK || res.QueueOffset != 0 || res.Queue.QueueID != 0 || res.MsgID != m.UniqKey() || res.MsgID == "" || res.OffsetMsgID == "" {
		t.Fatalf("sync result %+v (uniq %q)", res, m.UniqKey())
	}

	var wg sync.WaitGroup
	offs := make(chan int64, 5)
	for i := range 5 {
		wg.Add(1)
		p.SendAsync(ctx, newMsg("kinds", fmt.Sprintf("async-%d", i)), func(r SendResult, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("async send: %v", err)
				return
			}
			offs <- r.QueueOffset
		})
	}
	wg.Wait()
	close(offs)
	seen := map[int64]bool{}
	for o := range offs {
		seen[o] = true
	}
	for o := int64(1); o <= 5; o++ {
		if !seen[o] {
			t.Fatalf("async offsets %v lack %d", seen, o)
		}
	}

	if err := p.SendOneway(ctx, newMsg("kinds", "oneway")); err != nil {
		t.Fatal(err)
	}
	leader := g.WaitLeader(10 * time.Second)
	waitMaxOffset(t, g, leader, "kinds", 0, 7) // the oneway send

	batch := []*message.Message{newMsg("kinds", "b0"), newMsg("kinds", "b1"), newMsg("kinds", "b2")}
	br, err := p.SendBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if br.QueueOffset != 7 || len(bytes.Split([]byte(br.OffsetMsgID), []byte(","))) != 3 {
		t.Fatalf("batch result %+v", br)
	}
	waitMaxOffset(t, g, leader, "kinds", 0, 10)
	got := pullRaw(t, g, leader, "kinds", 0, 0)
	if len(got) != 10 {
		t.Fatalf("pulled %d messages, want 10", len(got))
	}
	first := got[0]
	if string(first.Body) != "sync-0" || first.Tags() != "TagA" || first.Property("color") != "blue" ||
		first.Property(message.PropertyKeys) != "k1 k2" || first.UniqKey() != res.MsgID || first.MsgID() != res.OffsetMsgID {
		t.Fatalf("stored first message %+v", first)
	}
	for i, b := range batch {
		if g := got[7+i]; string(g.Body) != string(b.Body) || g.UniqKey() != b.UniqKey() || g.QueueOffset != int64(7+i) {
			t.Fatalf("batch message %d stored as %q uniq %q offset %d", i, g.Body, g.UniqKey(), g.QueueOffset)
		}
	}
}

// TestProducerValidation fails bad sends before any I/O.
func TestProducerValidation(t *testing.T) {
	p, err := NewProducer("pg-test", WithNameServers("127.0.0.1:1"), WithMaxMessageSize(10))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 5*time.Second)
	if _, err := p.Send(ctx, newMsg("t", "x")); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("send before start: %v", err)
	}
	if err := p.Start(ctx); !errors.Is(err, ErrNoNameServer) {
		t.Fatalf("start without name server: %v", err)
	}
	p.started = true // exercise validation without a cluster
	cases := map[string]struct {
		send func() error
		want error
	}{
		"no topic":      {func() error { _, err := p.Send(ctx, newMsg("", "x")); return err }, ErrInvalidMessage},
		"illegal topic": {func() error { _, err := p.Send(ctx, newMsg("bad topic!", "x")); return err }, ErrInvalidMessage},
		"empty body":    {func() error { _, err := p.Send(ctx, newMsg("t", "")); return err }, ErrInvalidMessage},
		"too large":     {func() error { _, err := p.Send(ctx, newMsg("t", "0123456789ab")); return err }, ErrMessageTooLarge},
		"empty batch":   {func() error { _, err := p.SendBatch(ctx, nil); return err }, ErrInvalidMessage},
		"mixed batch": {func() error {
			_, err := p.SendBatch(ctx, []*message.Message{newMsg("a", "x"), newMsg("b", "y")})
			return err
		}, ErrInvalidMessage},
	}
	for name, c := range cases {
		if err := c.send(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, newMsg("t", "x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}
