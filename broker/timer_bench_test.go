package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// parkTimers commits n timer messages due in 6 days straight into the
// timer queue, in large entries (a send-path build would take minutes).
func parkTimers(b *testing.B, node *dledger.Node, n int) {
	at := time.Now().Add(6 * 24 * time.Hour).UnixMilli()
	for done := 0; done < n; {
		msgs := make([]dledger.Message, 0, 2000)
		for i := 0; i < 2000 && done < n; i, done = i+1, done+1 {
			m := &message.MessageExt{Message: message.Message{Topic: protocol.TimerTopic, Body: []byte("t"), Properties: map[string]string{
				message.PropertyRealTopic: "bench", message.PropertyRealQueueID: "0",
				message.PropertyTimerDeliverMS: strconv.FormatInt(at+int64(done), 10)}}}
			rec, err := message.AppendExt(nil, m)
			if err != nil {
				b.Fatal(err)
			}
			msgs = append(msgs, dledger.Message{Topic: protocol.TimerTopic, TagsCode: at + int64(done), Record: rec})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := node.Propose(ctx, &dledger.PutMessagesCommand{Messages: msgs})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendWithPendingTimers measures ordinary sends (8 concurrent
// senders) with no timers pending and with a million in the leader's wheel.
func BenchmarkSendWithPendingTimers(b *testing.B) {
	for _, pending := range []int{0, 1_000_000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			g := brokertest.Start(b, brokertest.Options{Configure: func(_ int, c *broker.Config) { c.AutoCreateTopic = true }})
			leader := g.WaitLeader(5 * time.Second)
			lb := g.Broker(leader)
			start := time.Now()
			parkTimers(b, lb.Node(), pending)
			g.Eventually(60*time.Second, func() error {
				if got := lb.PendingTimers(); got != int64(pending) {
					return fmt.Errorf("wheel holds %d of %d", got, pending)
				}
				return nil
			})
			b.Logf("%d timers parked and indexed in %v", pending, time.Since(start))
			req := func(i int) *remoting.Command {
				return sendMsgReq("bench", i%4, map[string]string{message.PropertyUniqKey: strconv.Itoa(i)}, make([]byte, 256))
			}
			g.Invoke(leader, req(-1)) // creates the topic
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < b.N; i += 8 {
						if resp := g.Invoke(leader, req(i)); resp.Code != remoting.ResSuccess {
							b.Errorf("send: %d %s", resp.Code, resp.Remark)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// BenchmarkTimerWheelRebuild measures how long a new leader takes to
// rebuild its wheel from a timer queue holding a million pending timers
// (from election to the full wheel).
func BenchmarkTimerWheelRebuild(b *testing.B) {
	const pending = 1_000_000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		g := brokertest.Start(b, brokertest.Options{})
		leader := g.WaitLeader(5 * time.Second)
		parkTimers(b, g.Broker(leader).Node(), pending)
		g.StopNode(leader)
		b.StartTimer()
		next := g.WaitLeader(10 * time.Second)
		g.Eventually(60*time.Second, func() error {
			if got := g.Broker(next).PendingTimers(); got != pending {
				return fmt.Errorf("new leader's wheel holds %d of %d", got, pending)
			}
			return nil
		})
		b.StopTimer()
	}
}
