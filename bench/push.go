package bench

import (
	"context"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

// startPush starts one push consumer of a fresh group on every topic of
// the workload, from the first offset, recording each message's latency
// (send stamp to the handler's call) into the returned consumers.
func startPush(ctx context.Context, c *Config) (*consumers, error) {
	group := c.Group
	if group == "" {
		group = "raftmq-bench-push-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	co := &consumers{hist: NewHistogram(), stamp: true}
	pc, err := client.NewPushConsumer(group, client.WithNameServers(c.NameServers...), client.WithCredentials(c.Credentials),
		client.WithTLS(c.TLS), client.WithInstanceName(instance("push", 0)), client.WithConsumeFrom(client.ConsumeFromFirst()),
		client.WithPullBatchSize(c.Batch))
	if err != nil {
		return nil, err
	}
	for _, t := range c.topics() {
		if err := pc.Subscribe(t, "*", co.handle); err != nil {
			return nil, err
		}
	}
	if err := pc.Start(ctx); err != nil {
		_ = pc.Close(context.Background())
		return nil, err
	}
	co.push = pc
	return co, nil
}

// handle is the push consumer's handler: count and time the messages.
func (co *consumers) handle(_ context.Context, msgs []*message.MessageExt) client.ConsumeResult {
	now := time.Now()
	var b uint64
	for _, m := range msgs {
		b += uint64(len(m.Body))
		if len(m.Body) >= 8 {
			co.hist.Record(now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(m.Body)))))
		}
	}
	co.bytes.Add(b)
	co.last.Store(now.UnixNano())
	co.got.Add(uint64(len(msgs)))
	return client.ConsumeSuccess
}
