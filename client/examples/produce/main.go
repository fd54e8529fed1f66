// Command produce sends a few messages with the raftmq SDK to the cluster
// `make run` starts (name server 127.0.0.1:9876): one sync send, async
// sends and a batch.
//
//	go run ./client/examples/produce -topic ExampleTopic -n 10
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

func main() {
	ns := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := flag.String("topic", "ExampleTopic", "topic (auto-created)")
	n := flag.Int("n", 10, "messages per kind")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, *ns, *topic, *n); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, ns, topic string, n int) error {
	p, err := client.NewProducer("example-producer", client.WithNameServers(ns))
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	defer p.Close(context.Background())

	// Sync: wait until the group's majority stored it.
	msg := &message.Message{Topic: topic, Body: []byte("hello, raftmq")}
	msg.SetTags("greeting")
	msg.SetKeys([]string{"order-1"})
	res, err := p.Send(ctx, msg)
	if err != nil {
		return err
	}
	fmt.Println("sync:", res)

	// Async: the callback runs once per message.
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		m := &message.Message{Topic: topic, Body: fmt.Appendf(nil, "async %d", i)}
		p.SendAsync(ctx, m, func(r client.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				log.Printf("async %d: %v", i, err)
				return
			}
			fmt.Println("async:", r)
		})
	}
	wg.Wait()

	// Batch: stored together, at consecutive offsets of one queue.
	var batch []*message.Message
	for i := range n {
		batch = append(batch, &message.Message{Topic: topic, Body: fmt.Appendf(nil, "batch %d", i)})
	}
	if res, err = p.SendBatch(ctx, batch); err != nil {
		return err
	}
	fmt.Println("batch:", res.Queue, "from offset", res.QueueOffset)
	return nil
}
