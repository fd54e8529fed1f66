// Command consume runs a raftmq SDK push consumer against the cluster
// `make run` starts (name server 127.0.0.1:9876) and prints what it
// receives, until -n messages arrived or it is interrupted. Produce some
// first with ./client/examples/produce.
//
//	go run ./client/examples/consume -topic ExampleTopic -group example-consumer -n 10
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

func main() {
	ns := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := flag.String("topic", "ExampleTopic", "topic to consume")
	group := flag.String("group", "example-consumer", "consumer group")
	expr := flag.String("expr", "*", `tag expression: "*" or "A || B"`)
	n := flag.Int64("n", 10, "stop after this many messages (0: until interrupted)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *ns, *topic, *group, *expr, *n); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, ns, topic, group, expr string, n int64) error {
	c, err := client.NewPushConsumer(group, client.WithNameServers(ns),
		// A new group starts at the first message (the default is the last).
		client.WithConsumeFrom(client.ConsumeFromFirst()))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var count atomic.Int64
	err = c.Subscribe(topic, expr, func(_ context.Context, msgs []*message.MessageExt) client.ConsumeResult {
		for _, m := range msgs {
			fmt.Printf("queue=%d offset=%d tags=%q body=%q\n", m.QueueID, m.QueueOffset, m.Tags(), m.Body)
			if count.Add(1) == n {
				cancel()
			}
		}
		// ConsumeRetryLater would redeliver the batch via %RETRY%group.
		return client.ConsumeSuccess
	})
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	// Close finishes the handlers running and commits the offsets, so the
	// next run of the group goes on from here.
	closeCtx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	fmt.Println("consumed", count.Load(), "messages")
	return c.Close(closeCtx)
}
