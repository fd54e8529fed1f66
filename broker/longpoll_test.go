package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/remoting"
)

type pullOutcome struct {
	resp *remoting.Command
	err  error
	at   time.Time
}

// startPull invokes a pull on node i in the background.
func startPull(g *brokertest.Group, i int, a pullArgs) <-chan pullOutcome {
	out := make(chan pullOutcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := g.Client.Invoke(ctx, g.Addr(i), pullReq(a))
		out <- pullOutcome{resp, err, time.Now()}
	}()
	return out
}

// waitHeld waits until node i holds n pulls.
func waitHeld(t *testing.T, g *brokertest.Group, i int, n int64) {
	t.Helper()
	g.Eventually(5*time.Second, func() error {
		if got := g.Broker(i).HeldPulls(); got != n {
			return fmt.Errorf("node %d holds %d pulls, want %d", i, got, n)
		}
		return nil
	})
}

// TestLongPoll holds pulls at the end of a queue: they answer as soon as a
// message arrives on their queue, 19 at their timeout, promptly on
// shutdown, and never block other requests on the same connection.
func TestLongPoll(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	leader := g.WaitLeader(5 * time.Second)
	const topic = "PollTopic"
	createTopic(t, g, topic, 3)

	t.Run("wakes on arrival", func(t *testing.T) {
		next := int64(0)
		for _, node := range []int{leader, follower(g, leader)} {
			g.Eventually(5*time.Second, func() error { // the node has applied the earlier rounds
				if r := g.Invoke(node, pullReq(pullArgs{topic: topic, offset: next})); r.Code != remoting.ResPullNotFound {
					return fmt.Errorf("node %d answers %d at offset %d", node, r.Code, next)
				}
				return nil
			})
			held := startPull(g, node, pullArgs{topic: topic, queueID: 0, offset: next, sysFlag: 2, suspendMs: 15000})
			waitHeld(t, g, node, 1)
			// A send on the same connection (g.Client) while the pull is
			// held must not wait for it, and a message on another queue
			// must not wake it.
			start := time.Now()
			send(t, g, leader, topic, 1, "", "other queue")
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("send behind a held pull took %v", d)
			}
			if g.Broker(node).HeldPulls() != 1 {
				t.Fatalf("node %d: a message on another queue ended the held pull", node)
			}
			send(t, g, leader, topic, 0, "", "wake")
			sent := time.Now()
			o := <-held
			if o.err != nil {
				t.Fatal(o.err)
			}
			next++
			msgs := expectPull(t, o.resp, remoting.ResSuccess, next)
			if len(msgs) != 1 || string(msgs[0].Body) != "wake" {
				t.Fatalf("node %d: woken pull got %d messages", node, len(msgs))
			}
			if d := o.at.Sub(sent); d > 300*time.Millisecond {
				t.Fatalf("node %d: woken pull answered %v after the send returned", node, d)
			}
			t.Logf("node %d: held pull answered %v after the send returned", node, o.at.Sub(sent))
		}
	})

	t.Run("times out with 19", func(t *testing.T) {
		start := time.Now()
		o := <-startPull(g, leader, pullArgs{topic: topic, queueID: 2, offset: 0, sysFlag: 2, suspendMs: 300})
		if o.err != nil {
			t.Fatal(o.err)
		}
		expectPull(t, o.resp, remoting.ResPullNotFound, 0)
		if d := o.at.Sub(start); d < 300*time.Millisecond || d > 3*time.Second {
			t.Fatalf("held pull answered after %v, want about 300ms", d)
		}
	})

	t.Run("no suspend bit answers at once", func(t *testing.T) {
		start := time.Now()
		resp := g.Invoke(leader, pullReq(pullArgs{topic: topic, queueID: 2, suspendMs: 10000}))
		expectPull(t, resp, remoting.ResPullNotFound, 0)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("pull without the suspend bit was held %v", d)
		}
	})

	t.Run("shutdown answers held pulls", func(t *testing.T) {
		f := follower(g, leader)
		held := startPull(g, f, pullArgs{topic: topic, queueID: 2, offset: 0, sysFlag: 2, suspendMs: 20000})
		waitHeld(t, g, f, 1)
		start := time.Now()
		g.StopNode(f)
		o := <-held
		if o.err != nil {
			t.Fatalf("held pull failed instead of being answered at shutdown: %v", o.err)
		}
		expectPull(t, o.resp, remoting.ResPullNotFound, 0)
		if d := o.at.Sub(start); d > 2*time.Second {
			t.Fatalf("held pull answered %v after shutdown began", d)
		}
		g.StartNode(f)
	})
}

// TestHeldPullsTakeNoConnectionPlace: a consumer holds one pull per queue
// on one connection, more queues than the connection's limit of running
// handlers, and its sends on that connection still go through.
func TestHeldPullsTakeNoConnectionPlace(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{Configure: func(_ int, c *broker.Config) {
		c.Remoting.MaxConcurrentPerConn, c.Remoting.BusyWait = 2, 100*time.Millisecond
	}})
	leader := g.WaitLeader(5 * time.Second)
	const topic, queues = "ManyQueues", 6
	createTopic(t, g, topic, queues)
	var held []<-chan pullOutcome
	for q := range queues {
		held = append(held, startPull(g, leader, pullArgs{topic: topic, queueID: q, offset: 0, sysFlag: 2, suspendMs: 20000}))
	}
	waitHeld(t, g, leader, queues)
	for q := range queues {
		send(t, g, leader, topic, q, "", fmt.Sprintf("m%d", q)) // fails the test on SYSTEM_BUSY
	}
	for q, h := range held {
		o := <-h
		if o.err != nil || o.resp.Code != remoting.ResSuccess {
			t.Fatalf("held pull of queue %d: %v, %v; want SUCCESS once its message arrived", q, o.resp, o.err)
		}
	}
}
