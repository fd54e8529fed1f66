package chaos

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

// seen is the set of message ids a live consumer received.
type seen struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (s *seen) add(key, seq string) {
	if key == "" {
		return
	}
	n, err := strconv.Atoi(seq)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.ids[msgID(key, n)] = true
	s.mu.Unlock()
}

// missing counts the ids of want this consumer has not received.
func (s *seen) missing(want map[string]bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id := range want {
		if !s.ids[id] {
			n++
		}
	}
	return n
}

// startConsumers starts an orderly push consumer of our SDK and one of the
// official client on the topic, each in a group of its own, from the
// first offset.
func startConsumers(t *testing.T, ns string) map[string]*seen {
	t.Helper()
	out := map[string]*seen{"sdk": {ids: map[string]bool{}}, "official": {ids: map[string]bool{}}}
	pc, err := client.NewPushConsumer("chaos-sdk-consumer", client.WithNameServers(ns),
		client.WithConsumeFrom(client.ConsumeFromFirst()), client.WithOrderly())
	if err != nil {
		t.Fatal(err)
	}
	s := out["sdk"]
	err = pc.Subscribe(topic, "*", func(_ context.Context, msgs []*message.MessageExt) client.ConsumeResult {
		for _, m := range msgs {
			s.add(m.Property(propKey), m.Property(propSeq))
		}
		return client.ConsumeSuccess
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close(context.Background()) })
	oc := startOfficialConsumer(t, ns, out["official"])
	t.Cleanup(func() { _ = oc.Shutdown() })
	return out
}

// startOfficialConsumer is the official client's orderly push consumer.
func startOfficialConsumer(t *testing.T, ns string, s *seen) rocketmq.PushConsumer {
	t.Helper()
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName("chaos-official-consumer"),
		consumer.WithInstance(fmt.Sprintf("chaos-%d", time.Now().UnixNano())),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerOrder(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				s.add(m.GetProperty(propKey), m.GetProperty(propSeq))
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}
