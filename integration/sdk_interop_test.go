package integration

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// createTopicOn creates topic with n queues on the cluster's leader.
func createTopicOn(t *testing.T, c *cluster, topic string, n int) {
	t.Helper()
	q := strconv.Itoa(n)
	req := remoting.NewRequest(remoting.ReqUpdateAndCreateTopic,
		map[string]string{"topic": topic, "readQueueNums": q, "writeQueueNums": q, "perm": "6"}, nil)
	waitFor(t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := c.invoke(ctx, c.nodes[c.waitLeader(10*time.Second)].addr, req)
		return err == nil && resp.Code == remoting.ResSuccess
	})
}

// sdkMessage is e2eMessage built with our message package.
func sdkMessage(topic string, i int) *message.Message {
	m := &message.Message{Topic: topic, Body: []byte("body-" + strconv.Itoa(i))}
	m.SetTags("T" + strconv.Itoa(i%3))
	m.SetKeys([]string{"k" + strconv.Itoa(i)})
	m.SetProperty("idx", strconv.Itoa(i))
	return m
}

func newSDKProducer(t *testing.T, ns string) *client.Producer {
	t.Helper()
	p, err := client.NewProducer("interop-sdk-producer", client.WithNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// sdkCollector is our push consumer's handler recording messages by idx.
type sdkCollector struct {
	mu  sync.Mutex
	got map[int]*message.MessageExt
}

func (s *sdkCollector) handle(_ context.Context, msgs []*message.MessageExt) client.ConsumeResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		if idx, err := strconv.Atoi(m.Property("idx")); err == nil {
			s.got[idx] = m
		}
	}
	return client.ConsumeSuccess
}

func (s *sdkCollector) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func startSDKConsumer(t *testing.T, ns, group, topic, name string, h client.MessageHandler, opts ...client.PushConsumerOpt) *client.PushConsumer {
	t.Helper()
	opts = append([]client.PushConsumerOpt{client.WithNameServers(ns), client.WithInstanceName(name),
		client.WithConsumeFrom(client.ConsumeFromFirst())}, opts...)
	pc, err := client.NewPushConsumer(group, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, "*", h); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close(context.Background()) })
	return pc
}

// TestInteropSDKProducesOfficialConsumes: messages sent by our producer
// are consumed by the official push consumer with body, tag, keys and
// properties intact.
func TestInteropSDKProducesOfficialConsumes(t *testing.T) {
	c := startCluster(t)
	createTopicOn(t, c, "InteropA", 4)
	p := newSDKProducer(t, c.nsAddr)
	const n = 300
	want := map[int]bool{}
	for i := range n {
		if _, err := p.Send(context.Background(), sdkMessage("InteropA", i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		want[i] = true
	}
	got := consumeAll(t, c.nsAddr, "InteropA", "interop-official", want, 60*time.Second)
	for i := range n {
		m := got[i]
		if m == nil {
			t.Fatalf("message %d not consumed (%d of %d)", i, len(got), n)
		}
		if string(m.Body) != "body-"+strconv.Itoa(i) || m.GetTags() != "T"+strconv.Itoa(i%3) || m.GetKeys() != "k"+strconv.Itoa(i) {
			t.Fatalf("message %d altered: body %q tags %q keys %q", i, m.Body, m.GetTags(), m.GetKeys())
		}
		if m.MsgId == "" || m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex) != m.MsgId {
			t.Fatalf("message %d: msgId %q, UNIQ_KEY %q", i, m.MsgId, m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex))
		}
	}
}

// TestInteropOfficialProducesSDKConsumes: messages sent by the official
// producer are consumed by our push consumer, with a tag filter, intact.
func TestInteropOfficialProducesSDKConsumes(t *testing.T) {
	c := startCluster(t)
	createTopicOn(t, c, "InteropB", 4)
	op := newOfficialProducer(t, c.nsAddr, "interop-official-producer")
	const n = 300
	acked := sendConcurrently(t, op, "InteropB", n, 4)
	if len(acked) != n {
		t.Fatalf("%d of %d sends acknowledged", len(acked), n)
	}
	all := &sdkCollector{got: map[int]*message.MessageExt{}}
	tagged := &sdkCollector{got: map[int]*message.MessageExt{}}
	startSDKConsumer(t, c.nsAddr, "interop-sdk", "InteropB", "all", all.handle)
	pc, err := client.NewPushConsumer("interop-sdk-tagged", client.WithNameServers(c.nsAddr),
		client.WithInstanceName("tagged"), client.WithConsumeFrom(client.ConsumeFromFirst()))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe("InteropB", "T1 || T2", tagged.handle); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close(context.Background()) })
	wantTagged := 0
	for i := range n {
		if i%3 != 0 {
			wantTagged++
		}
	}
	waitFor(t, 60*time.Second, func() bool { return all.count() == n && tagged.count() == wantTagged })
	all.mu.Lock()
	defer all.mu.Unlock()
	tagged.mu.Lock()
	defer tagged.mu.Unlock()
	for i := range n {
		m := all.got[i]
		if string(m.Body) != "body-"+strconv.Itoa(i) || m.Tags() != "T"+strconv.Itoa(i%3) || m.Keys()[0] != "k"+strconv.Itoa(i) {
			t.Fatalf("message %d altered: body %q tags %q keys %v", i, m.Body, m.Tags(), m.Keys())
		}
		if _, ok := tagged.got[i]; ok != (i%3 != 0) {
			t.Fatalf("message %d (tag T%d): delivered to the T1 || T2 consumer: %v", i, i%3, ok)
		}
	}
}

// TestInteropMixedGroup: an official push consumer and ours in one
// clustering group split the queues (both allocate averagely over the
// same sorted lists) and together consume every message.
func TestInteropMixedGroup(t *testing.T) {
	c := startCluster(t)
	createTopicOn(t, c, "InteropC", 8)
	ours := &sdkCollector{got: map[int]*message.MessageExt{}}
	sdk := startSDKConsumer(t, c.nsAddr, "interop-mixed", "InteropC", "sdk", ours.handle)

	var mu sync.Mutex
	theirs := map[int]bool{}
	oc := startOfficialConsumer(t, c.nsAddr, "interop-mixed", "InteropC", consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if idx, err := strconv.Atoi(m.GetProperty("idx")); err == nil {
					theirs[idx] = true
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	defer oc.Shutdown()
	// Our consumer gives up half the queues once it sees the official one.
	waitFor(t, 30*time.Second, func() bool { return len(sdk.Assignment()) == 4 })

	p := newSDKProducer(t, c.nsAddr)
	const n = 200
	for i := range n {
		if _, err := p.Send(context.Background(), sdkMessage("InteropC", i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	waitFor(t, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		ours.mu.Lock()
		defer ours.mu.Unlock()
		for i := range n {
			if !theirs[i] && ours.got[i] == nil {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	if len(theirs) == 0 || ours.count() == 0 {
		t.Fatalf("the queues were not shared: official %d, ours %d", len(theirs), ours.count())
	}
	t.Logf("official consumed %d, ours %d", len(theirs), ours.count())
}
