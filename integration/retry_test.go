package integration

// Retry and delay levels with the official client against the 3-process
// cluster, on the real delay levels: a delayed message (level 1 = 1 s) and a
// push consumer's ConsumeRetryLater, redelivered through %RETRY%<group> after
// level 3 (10 s).

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

type attempt struct {
	at  time.Time
	msg *primitive.MessageExt
}

func TestOfficialClientRetryLaterAndDelayLevel(t *testing.T) {
	c := startCluster(t)
	p := newOfficialProducer(t, c.nsAddr, "retry_pg")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A delayed message: level 1 is 1 s on the default levels.
	delayed := primitive.NewMessage("delay_it", []byte("later"))
	delayed.WithDelayTimeLevel(1)
	sentDelayed := time.Now()
	if _, err := p.SendSync(ctx, delayed); err != nil {
		t.Fatalf("send delayed: %v", err)
	}
	// A message the consumer fails once.
	failing := primitive.NewMessage("retry_it", []byte("fail-once"))
	res, err := p.SendSync(ctx, failing)
	if err != nil {
		t.Fatalf("send: %v", err)
	}

	var mu sync.Mutex
	var attempts []attempt
	var delayedGot *attempt
	done := make(chan struct{})
	var once sync.Once
	pc, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.nsAddr})),
		consumer.WithGroupName("retry_cg"),
		consumer.WithInstance(fmt.Sprintf("retry_cg-%d", time.Now().UnixNano())),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		t.Fatal(err)
	}
	listen := func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			switch m.Topic {
			case "delay_it":
				delayedGot = &attempt{time.Now(), m}
			case "retry_it":
				attempts = append(attempts, attempt{time.Now(), m})
				if m.ReconsumeTimes == 0 {
					return consumer.ConsumeRetryLater, nil
				}
			}
		}
		if len(attempts) >= 2 && delayedGot != nil {
			once.Do(func() { close(done) })
		}
		return consumer.ConsumeSuccess, nil
	}
	for _, topic := range []string{"delay_it", "retry_it"} {
		if err := pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, listen); err != nil {
			t.Fatal(err)
		}
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	if delayedGot == nil {
		t.Fatal("delayed message never consumed")
	}
	if wait := delayedGot.msg.StoreTimestamp - delayedGot.msg.BornTimestamp; wait < 1000 || delayedGot.at.Sub(sentDelayed) < time.Second {
		t.Fatalf("level-1 message stored for delivery %d ms after it was born, consumed %v after send; want ≥ 1 s", wait, delayedGot.at.Sub(sentDelayed))
	}
	t.Logf("level 1: delivered %d ms after born, consumed %v after send", delayedGot.msg.StoreTimestamp-delayedGot.msg.BornTimestamp, delayedGot.at.Sub(sentDelayed))
	if len(attempts) < 2 {
		t.Fatalf("%d attempts of the failing message, want a redelivery", len(attempts))
	}
	first, second := attempts[0], attempts[1]
	if first.msg.ReconsumeTimes != 0 || second.msg.ReconsumeTimes != 1 {
		t.Fatalf("reconsumeTimes %d then %d, want 0 then 1", first.msg.ReconsumeTimes, second.msg.ReconsumeTimes)
	}
	if second.msg.MsgId != res.MsgID || string(second.msg.Body) != "fail-once" || second.msg.Topic != "retry_it" {
		t.Fatalf("redelivery: id %s (want %s) topic %s body %q", second.msg.MsgId, res.MsgID, second.msg.Topic, second.msg.Body)
	}
	if gap := second.at.Sub(first.at); gap < 10*time.Second {
		t.Fatalf("redelivered %v after the failure, level 3 is 10 s", gap)
	}
	t.Logf("ConsumeRetryLater: redelivered %v after the failed attempt (level 3 = 10 s), reconsumeTimes 1", second.at.Sub(first.at))
}
