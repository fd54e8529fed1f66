package client

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
)

// sendLog records every send of a failover run.
type sendLog struct {
	mu       sync.Mutex
	acked    map[string]MessageQueue // uniq key → queue
	failures []error
	worst    time.Duration // longest single send
	lastOK   time.Time
	worstGap time.Duration // longest time without any acknowledgement
}

func (l *sendLog) record(uniq string, start time.Time, res SendResult, err error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.worst = max(l.worst, now.Sub(start))
	if err != nil {
		l.failures = append(l.failures, err)
		return
	}
	l.acked[uniq] = res.Queue
	if !l.lastOK.IsZero() {
		l.worstGap = max(l.worstGap, now.Sub(l.lastOK))
	}
	l.lastOK = now
}

// TestProducerFailover stops the leader while four goroutines send with
// the default options: no send may fail, none may take 5 s or more, and
// every acknowledged message must be in the new leader's queues. The
// leader goes two ways: a graceful stop (it unregisters, drains and
// closes), and a crash of its raft node alone, which leaves a zombie that
// the route still names as id 0 and that answers SERVICE_NOT_AVAILABLE
// until the new leader registers.
func TestProducerFailover(t *testing.T) {
	t.Run("Stop", func(t *testing.T) { testFailover(t, func(g *brokertest.Group, i int) { g.StopNode(i) }) })
	t.Run("RaftCrash", func(t *testing.T) {
		testFailover(t, func(g *brokertest.Group, i int) {
			if err := g.Broker(i).Node().Close(); err != nil {
				t.Fatalf("crash raft of node %d: %v", i, err)
			}
		})
	})
}

func testFailover(t *testing.T, kill func(g *brokertest.Group, i int)) {
	g := brokertest.Start(t, brokertest.Options{})
	const topic = "failover"
	createTopic(t, g, topic, 4)
	p := startProducer(t, g)
	ctx := testCtx(t, 60*time.Second)
	log := &sendLog{acked: map[string]MessageQueue{}}

	var stop atomic.Bool
	var sent atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				m := newMsg(topic, fmt.Sprintf("w%d-%d", w, i))
				start := time.Now()
				res, err := p.Send(ctx, m)
				log.record(m.UniqKey(), start, res, err)
				sent.Add(1)
			}
		}()
	}
	waitCount(t, &sent, 200)
	old := g.WaitLeader(10 * time.Second)
	killed := time.Now()
	kill(g, old)
	newLeader := waitOtherLeader(t, g, old)
	t.Logf("leader %d stopped; node %d leads after %v", old, newLeader, time.Since(killed))
	after := sent.Load()
	waitCount(t, &sent, after+200)
	stop.Store(true)
	wg.Wait()

	log.mu.Lock()
	defer log.mu.Unlock()
	t.Logf("%d sends acknowledged; worst send %v; worst gap between acknowledgements %v", len(log.acked), log.worst, log.worstGap)
	if len(log.failures) > 0 {
		t.Fatalf("%d sends failed, first: %v", len(log.failures), log.failures[0])
	}
	// A sanity bound (a stuck client, a group that cannot elect), not the
	// 2 s target: the failover time is measured (docs/RELIABILITY.md), and
	// under -race on two loaded cores an election alone can pass 2 s.
	if log.worst >= 5*time.Second || log.worstGap >= 5*time.Second {
		t.Fatalf("failover delayed sends: worst send %v, worst gap %v (sanity limit 5 s)", log.worst, log.worstGap)
	}
	// A send is acknowledged once a majority stored it; the new leader's
	// queues show it once it applied it, which may come a little after.
	var dups int
	g.Eventually(10*time.Second, func() error {
		var stored map[string]map[int32]bool
		stored, dups = storedUniqKeys(t, g, newLeader, topic, 4)
		for k, q := range log.acked {
			if !stored[k][q.QueueID] {
				return fmt.Errorf("acknowledged message %s is missing from queue %s (stored in %v)", k, q, stored[k])
			}
		}
		return nil
	})
	t.Logf("%d messages stored more than once (retried after an unknown outcome)", dups)
}

// waitOtherLeader waits for a leader other than node old.
func waitOtherLeader(t *testing.T, g *brokertest.Group, old int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for i := range g.Len() {
			if b := g.Broker(i); i != old && b != nil && b.Node().IsLeader() {
				return i
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitCount(t *testing.T, n *atomic.Int64, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for n.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("only %d sends of %d", n.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// storedUniqKeys reads every message of a topic's queues at node i: the
// queues each unique key is in, and how many keys are stored twice.
func storedUniqKeys(t *testing.T, g *brokertest.Group, i int, topic string, queues int32) (map[string]map[int32]bool, int) {
	t.Helper()
	out, dups := map[string]map[int32]bool{}, 0
	for q := range queues {
		max := maxOffset(t, g, i, topic, q)
		for off := int64(0); off < max; {
			msgs := pullRaw(t, g, i, topic, q, off)
			if len(msgs) == 0 {
				t.Fatalf("queue %d: nothing at %d of %d", q, off, max)
			}
			for _, m := range msgs {
				k := m.Property(message.PropertyUniqKey)
				if out[k] == nil {
					out[k] = map[int32]bool{}
				} else {
					dups++
				}
				out[k][q] = true
			}
			off = msgs[len(msgs)-1].QueueOffset + 1
		}
	}
	return out, dups
}
