package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

// startOfficialReplier runs an official push consumer on topic that
// answers every request with "re:"+body through an official producer.
func startOfficialReplier(t *testing.T, ns, topic, group string) {
	t.Helper()
	replies := newOfficialProducer(t, ns, group+"-replies")
	c := startOfficialConsumer(t, ns, group, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				r, err := consumer.CreateReplyMessage(m, []byte("re:"+string(m.Body)))
				if err != nil {
					t.Errorf("official CreateReplyMessage: %v", err)
					continue
				}
				// The official helper parses the body as properties and
				// leaves the reply's body empty; a user sets it.
				r.Body = []byte("re:" + string(m.Body))
				if _, err := replies.SendSync(ctx, r); err != nil {
					t.Logf("official replier: reply not sent, consumed again later: %v", err)
					return consumer.ConsumeRetryLater, nil
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	t.Cleanup(func() { _ = c.Shutdown() })
}

// startSDKReplier is startOfficialReplier with our push consumer and
// producer.
func startSDKReplier(t *testing.T, ns, topic, group string) {
	t.Helper()
	replies, err := client.NewProducer(group+"-replies", client.WithNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := replies.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replies.Close(context.Background()) })
	startSDKConsumer(t, ns, group, topic, group, func(ctx context.Context, msgs []*message.MessageExt) client.ConsumeResult {
		for _, m := range msgs {
			r, err := client.NewReplyMessage(m, []byte("re:"+string(m.Body)))
			if err != nil {
				t.Errorf("NewReplyMessage: %v", err)
				continue
			}
			if _, err := replies.Send(ctx, r); err != nil {
				t.Logf("SDK replier: reply to %s not sent, consumed again later: %v", m.Property(message.PropertyCorrelationID), err)
				return client.ConsumeRetryLater
			}
		}
		return client.ConsumeSuccess
	})
}

// TestRequestReply: RocketMQ request-reply round-trips through raftmq's
// <cluster>_REPLY_TOPIC, SEND_REPLY_MESSAGE(_V2) and
// PUSH_REPLY_MESSAGE_TO_CLIENT, with requesters and repliers of the
// official Go client and of our SDK in every combination, sync and async.
func TestRequestReply(t *testing.T) {
	c := startCluster(t)
	ns := c.nsAddr
	for _, tc := range []struct {
		name              string
		officialRequester bool
		officialReplier   bool
	}{
		{"official-official", true, true},
		{"sdk-sdk", false, false},
		{"official-sdk", true, false},
		{"sdk-official", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "RR-" + tc.name
			createTopicOn(t, c, topic, 2)
			if tc.officialReplier {
				startOfficialReplier(t, ns, topic, "replier-"+tc.name)
			} else {
				startSDKReplier(t, ns, topic, "replier-"+tc.name)
			}
			if tc.officialRequester {
				officialRequests(t, ns, topic, "requester-"+tc.name)
			} else {
				sdkRequests(t, ns, topic, "requester-"+tc.name)
			}
		})
	}
}

// requestTimeout is long enough for a replier that starts with the test,
// and for one redelivery of a request whose reply could not be sent (the
// first retry level waits 10 s).
const requestTimeout = 40 * time.Second

func officialRequests(t *testing.T, ns, topic, group string) {
	p := newOfficialProducer(t, ns, group)
	for i := range 3 {
		body := fmt.Sprintf("q%d", i)
		r, err := p.Request(context.Background(), requestTimeout, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("official Request %d: %v", i, err)
		}
		if string(r.Body) != "re:"+body {
			t.Fatalf("official Request %d answered %q", i, r.Body)
		}
	}
	got := make(chan string, 1)
	err := p.RequestAsync(context.Background(), requestTimeout, func(_ context.Context, m *primitive.Message, err error) {
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(m.Body)
	}, primitive.NewMessage(topic, []byte("async")))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "re:async" {
			t.Fatalf("official RequestAsync answered %q", s)
		}
	case <-time.After(requestTimeout + 5*time.Second):
		t.Fatal("official RequestAsync callback never ran")
	}
}

func sdkRequests(t *testing.T, ns, topic, group string) {
	p, err := client.NewProducer(group, client.WithNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	for i := range 3 {
		body := fmt.Sprintf("q%d", i)
		r, err := p.Request(context.Background(), &message.Message{Topic: topic, Body: []byte(body)}, requestTimeout)
		if err != nil {
			t.Fatalf("SDK Request %d: %v", i, err)
		}
		if string(r.Body) != "re:"+body || r.Property(message.PropertyMsgType) != "reply" {
			t.Fatalf("SDK Request %d answered %q %v", i, r.Body, r.Properties)
		}
	}
	got := make(chan string, 1)
	p.RequestAsync(context.Background(), &message.Message{Topic: topic, Body: []byte("async")}, requestTimeout, func(m *message.MessageExt, err error) {
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(m.Body)
	})
	select {
	case s := <-got:
		if s != "re:async" {
			t.Fatalf("SDK RequestAsync answered %q", s)
		}
	case <-time.After(requestTimeout + 5*time.Second):
		t.Fatal("SDK RequestAsync callback never ran")
	}
}
