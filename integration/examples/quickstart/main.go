// Command quickstart sends messages to raftmq with the official Apache
// RocketMQ Go client and consumes them back with its push consumer: proof
// that an unmodified RocketMQ application works against `make run`.
//
//	cd integration && go run ./examples/quickstart -namesrv 127.0.0.1:9876
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func main() {
	nsAddr := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := flag.String("topic", "QuickstartTopic", "topic (auto-created by `raftmq dev`)")
	count := flag.Int("n", 10, "messages to send and consume")
	timeout := flag.Duration("timeout", 60*time.Second, "give up consuming after this long")
	flag.Parse()
	rlog.SetLogLevel("error")
	if err := run(*nsAddr, *topic, *count, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(nsAddr, topic string, count int, timeout time.Duration) error {
	ns := primitive.NewPassthroughResolver([]string{nsAddr})
	p, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("quickstart-producer"), producer.WithRetry(2))
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer p.Shutdown()
	runID := fmt.Sprint(time.Now().UnixNano())
	for i := 0; i < count; i++ {
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("hello raftmq %d", i)))
		msg.WithTag("quickstart").WithKeys([]string{runID})
		res, err := p.SendSync(context.Background(), msg)
		if err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		fmt.Printf("sent     %-28s queue %d offset %d\n", msg.Body, res.MessageQueue.QueueId, res.QueueOffset)
	}

	var got atomic.Int64
	done := make(chan struct{})
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName("quickstart-consumer-"+runID),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		return err
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "quickstart"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				if m.GetKeys() != runID {
					continue // an earlier run's message
				}
				fmt.Printf("consumed %-28s queue %d offset %d\n", m.Body, m.Queue.QueueId, m.QueueOffset)
				if got.Add(1) == int64(count) {
					close(done)
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer c.Shutdown()
	select {
	case <-done:
		fmt.Printf("ok: %d sent, %d consumed\n", count, count)
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("consumed %d of %d within %v", got.Load(), count, timeout)
	}
}
