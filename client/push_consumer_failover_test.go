package client

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
)

// TestPushFollowsLeader stops the leader while a push consumer consumes
// and a producer sends: every acknowledged message is consumed, and the
// group's offsets are then committed at the new leader.
func TestPushFollowsLeader(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "cf-fail", 4)
	p := startProducer(t, g)
	c := newCollector()
	startPush(t, g, "cg-fail", "f", "cf-fail", "*", c.handler, WithConsumeFrom(ConsumeFromFirst()))

	var mu sync.Mutex
	var acked []string
	send := func(from, to int) {
		ctx := testCtx(t, 30*time.Second)
		for i := from; i < to; i++ {
			m := newMsg("cf-fail", fmt.Sprintf("m-%d", i))
			if _, err := p.Send(ctx, m); err == nil {
				mu.Lock()
				acked = append(acked, string(m.Body))
				mu.Unlock()
			}
		}
	}
	send(0, 50)
	c.waitDistinct(t, 50, 20*time.Second)
	leader := g.WaitLeader(10 * time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		send(50, 250)
	}()
	g.StopNode(leader)
	<-done
	newLeader := g.WaitLeader(15 * time.Second)
	mu.Lock()
	all := append([]string(nil), acked...)
	mu.Unlock()
	waitFor(t, 30*time.Second, "every acknowledged message", func() bool {
		got := c.bodies()
		for _, b := range all {
			if got[b] == 0 {
				return false
			}
		}
		return true
	})
	waitFor(t, 20*time.Second, "offsets committed at the new leader", func() bool {
		sum := int64(0)
		for q := range int32(4) {
			sum += committedOffset(t, g, "cg-fail", "cf-fail", q)
		}
		return sum >= int64(len(all))
	})
	dups := 0
	for _, n := range c.bodies() {
		dups += n - 1
	}
	t.Logf("leader %d → %d; %d acknowledged, all consumed, %d duplicates", leader, newLeader, len(all), dups)
}
