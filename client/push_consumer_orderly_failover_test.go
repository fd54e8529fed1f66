package client

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
)

// seqRecorder records, per sharding key, the sequence numbers an orderly
// handler received, in delivery order.
type seqRecorder struct {
	mu   sync.Mutex
	seen map[string][]int
}

func (r *seqRecorder) handler(_ context.Context, msgs []*message.MessageExt) ConsumeResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		seq, _ := strconv.Atoi(m.Property("seq"))
		r.seen[m.Property(message.PropertyShardingKey)] = append(r.seen[m.Property(message.PropertyShardingKey)], seq)
	}
	return ConsumeSuccess
}

// check returns, for one key, how many deliveries were redeliveries and an
// error if the first deliveries skipped or reordered a sequence number.
func checkKeyOrder(seqs []int, acked int) (redelivered int, err error) {
	next := 0 // the next sequence number never delivered before
	for _, s := range seqs {
		switch {
		case s == next:
			next++
		case s < next:
			redelivered++ // a message delivered again after the failover
		default:
			return redelivered, fmt.Errorf("got seq %d before %d (gap or reordering) in %v", s, next, seqs)
		}
	}
	if next < acked {
		return redelivered, fmt.Errorf("only %d of %d acknowledged messages delivered", next, acked)
	}
	return redelivered, nil
}

// TestPushOrderlyFailover: per sharding key, an orderly consumer sees no
// gap and no reordering while the leader is stopped mid-stream; a
// redelivery of messages it had already seen is allowed and counted.
func TestPushOrderlyFailover(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "ord-fail", 4)
	p := startProducer(t, g, WithSelector(HashSelector(nil)))
	rec := &seqRecorder{seen: map[string][]int{}}
	startPush(t, g, "cg-ord-fail", "o", "ord-fail", "*", rec.handler,
		WithOrderly(), WithConsumeFrom(ConsumeFromFirst()))

	const keys = 6
	acked := make([]int, keys) // per key: how many were acknowledged, in order
	send := func(rounds int) {
		ctx := testCtx(t, 60*time.Second)
		for r := 0; r < rounds; r++ {
			for k := 0; k < keys; k++ {
				m := newMsg("ord-fail", fmt.Sprintf("k%d-%d", k, acked[k]))
				m.SetProperty(message.PropertyShardingKey, "key-"+strconv.Itoa(k))
				m.SetProperty("seq", strconv.Itoa(acked[k]))
				// Order per key requires the next message to wait for this
				// one's acknowledgement: retry it until it is stored.
				for {
					if _, err := p.Send(ctx, m); err == nil {
						break
					}
					if ctx.Err() != nil {
						t.Fatalf("send %s: %v", m.Body, ctx.Err())
					}
				}
				acked[k]++
			}
		}
	}
	send(20)
	leader := g.WaitLeader(10 * time.Second)
	stopped := make(chan struct{})
	go func() { defer close(stopped); g.StopNode(leader) }()
	send(40)
	<-stopped

	waitFor(t, 40*time.Second, "every key's acknowledged messages", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for k := 0; k < keys; k++ {
			if _, err := checkKeyOrder(rec.seen["key-"+strconv.Itoa(k)], acked[k]); err != nil {
				return false
			}
		}
		return true
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	total := 0
	for k := 0; k < keys; k++ {
		n, err := checkKeyOrder(rec.seen["key-"+strconv.Itoa(k)], acked[k])
		if err != nil {
			t.Fatalf("key-%d: %v", k, err)
		}
		total += n
	}
	t.Logf("leader %d stopped mid-stream: %d keys × %d messages in order, %d redeliveries", leader, keys, acked[0], total)
}

func TestCheckKeyOrder(t *testing.T) {
	for _, tc := range []struct {
		seqs    []int
		acked   int
		redeliv int
		bad     bool
	}{
		{[]int{0, 1, 2}, 3, 0, false},
		{[]int{0, 1, 1, 2}, 3, 1, false},
		{[]int{0, 1, 2, 1, 2, 3}, 4, 2, false},
		{[]int{0, 2}, 3, 0, true},
		{[]int{1, 0}, 2, 0, true},
		{[]int{0, 1}, 3, 0, true},
	} {
		n, err := checkKeyOrder(tc.seqs, tc.acked)
		if (err != nil) != tc.bad || (!tc.bad && n != tc.redeliv) {
			t.Errorf("checkKeyOrder(%v, %d) = %d, %v", tc.seqs, tc.acked, n, err)
		}
	}
}
