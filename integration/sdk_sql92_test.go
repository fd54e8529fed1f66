package integration

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

// sdkSQLMessages sends messages 0..60 (sdkMessage: tags T0, T1, T2, idx)
// to a one-queue topic with our producer, each with a "price" of its
// index except those ending in 9 (no price: SQL92's NULL). It returns the
// indexes "price >= 30 AND TAGS = 'T0'" selects; the last message (60) is
// one, so once it is consumed everything was pulled.
func sdkSQLMessages(t *testing.T, ns, topic string) map[int]bool {
	t.Helper()
	p := newSDKProducer(t, ns)
	want := map[int]bool{}
	for i := 0; i <= 60; i++ {
		m := sdkMessage(topic, i)
		if i%10 != 9 {
			m.SetProperty("price", strconv.Itoa(i))
		}
		if _, err := p.Send(context.Background(), m); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		want[i] = i%10 != 9 && i >= 30 && i%3 == 0
	}
	return want
}

const sdkSQLExpr = "price >= 30 AND TAGS = 'T0'"

// checkSQLSelected fails unless got holds exactly the indexes want selects,
// each once.
func checkSQLSelected(t *testing.T, want map[int]bool, got map[int]int) {
	t.Helper()
	n := 0
	for i, w := range want {
		if w {
			n++
		}
		switch {
		case w && got[i] != 1:
			t.Errorf("matching message %d delivered %d times", i, got[i])
		case !w && got[i] != 0:
			t.Errorf("message %d does not match but was delivered %d times", i, got[i])
		}
	}
	if n == 0 || n == len(want) {
		t.Fatalf("the condition selects %d of %d messages: it proves nothing", n, len(want))
	}
	for i := range got {
		if _, ok := want[i]; !ok {
			t.Errorf("unknown message %d delivered", i)
		}
	}
}

// TestSDKPushConsumerSQL92: our push consumer subscribed with an SQL92
// selector receives exactly the matching messages from real broker
// processes (the broker filters, our client does not).
func TestSDKPushConsumerSQL92(t *testing.T) {
	c := startCluster(t)
	const topic = "SDKSQL92Push"
	createTopicOn(t, c, topic, 1)
	want := sdkSQLMessages(t, c.nsAddr, topic)

	var mu sync.Mutex
	got := map[int]int{}
	pc, err := client.NewPushConsumer("sdk-sql-push", client.WithNameServers(c.nsAddr),
		client.WithConsumeFrom(client.ConsumeFromFirst()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close(context.Background()) })
	err = pc.SubscribeSelector(topic, client.SQL92(sdkSQLExpr), func(_ context.Context, msgs []*message.MessageExt) client.ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			idx, err := strconv.Atoi(m.Property("idx"))
			if err != nil {
				t.Errorf("message without idx: %v", m)
				continue
			}
			got[idx]++
		}
		return client.ConsumeSuccess
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got[60] > 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pc.Close(ctx); err != nil { // running handlers finish
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	checkSQLSelected(t, want, got)
}

// TestSDKPullConsumerSQL92: our pull consumer subscribed with an SQL92
// selector polls exactly the matching messages from real broker processes.
func TestSDKPullConsumerSQL92(t *testing.T) {
	c := startCluster(t)
	const topic = "SDKSQL92Pull"
	createTopicOn(t, c, topic, 1)
	want := sdkSQLMessages(t, c.nsAddr, topic)

	pc, err := client.NewPullConsumer("sdk-sql-pull", client.WithNameServers(c.nsAddr),
		client.WithConsumeFrom(client.ConsumeFromFirst()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close(context.Background()) })
	if err := pc.SubscribeSelector(topic, client.SQL92(sdkSQLExpr)); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := map[int]int{}
	for got[60] == 0 {
		msgs, err := pc.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d messages: %v", len(got), err)
		}
		for _, m := range msgs {
			idx, err := strconv.Atoi(m.Property("idx"))
			if err != nil {
				t.Fatalf("message without idx: %v", m)
			}
			got[idx]++
		}
	}
	checkSQLSelected(t, want, got)
}
