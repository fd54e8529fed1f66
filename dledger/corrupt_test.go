package dledger_test

import (
	"math/rand"
	"testing"
	"time"

	"github.com/raftmq/raftmq/dledger/dledgertest"
)

// TestBitFlipMinorityCommitlog is Jepsen's NATS finding turned into a
// test: one bit flipped in the synced commitlog of one follower must not
// lose an acknowledged message. f2 is stopped while the leader and f1
// acknowledge more messages, then f1 and the leader stop, a bit flips in a
// record f1 and f2 share, and f1 and f2 come back without the leader:
// f1's log, cut at the flipped record, now looks no longer than f2's,
// which lacks the last acknowledged messages. f1 must not help f2 (or
// itself) win an election until it is back to what it had; once the
// leader returns, f1 catches up and every acknowledged message is on
// every node.
func TestBitFlipMinorityCommitlog(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(c *dledgertest.Cluster, i int)
	}{
		{"after kill", func(c *dledgertest.Cluster, i int) { c.Kill(i) }},
		{"after power loss", func(c *dledgertest.Cluster, i int) { c.LosePower(i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(1))
			c := dledgertest.New(t, dledgertest.Options{Configure: fastConfig, MemFS: true})
			leader := c.WaitLeader(5 * time.Second)
			f1, f2 := (leader+1)%3, (leader+2)%3
			p, stop := background(t, c, 6)
			defer stop()
			waitAcks(t, c, p, 300)
			f2Last, _ := c.Node(f2).LogStore().LastIndex()
			c.Kill(f2)
			waitAcks(t, c, p, len(p.acks())+300) // on the leader and f1 only
			tc.stop(c, f1)
			c.Kill(leader)
			hit := c.FlipBit(f1, rng, 2, f2Last)
			t.Logf("flipped a bit in entry %d of n%d; n%d ends at %d", hit, f1, f2, f2Last)

			c.Restart(f1)
			c.Restart(f2)
			if x := c.Member(f1).Log.RecoveringThrough(); x <= f2Last {
				t.Fatalf("n%d recovering through %d, want above %d", f1, x, f2Last)
			}
			noLeader(t, c, 3*time.Second, f1, f2)

			c.Restart(leader)
			c.WaitLeader(10 * time.Second)
			waitAcks(t, c, p, len(p.acks())+100)
			stop()
			c.WaitConverged(20 * time.Second)
			checkAcked(t, c, p.acks())
			checkQueuesIdentical(t, c)
			checkLogsIdentical(t, c)
			if x := c.Member(f1).Log.RecoveringThrough(); x != 0 {
				t.Fatalf("n%d still recovering through %d after catching up", f1, x)
			}
		})
	}
}

// noLeader asserts that none of nodes becomes leader for d: a group whose
// majority needs a recovering node must stay without one.
func noLeader(t *testing.T, c *dledgertest.Cluster, d time.Duration, nodes ...int) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for _, i := range nodes {
			if n := c.Node(i); n != nil && n.IsLeader() {
				t.Fatalf("n%d became leader while n%d recovers", i, nodes[0])
			}
		}
	}
}

// TestTornPageCommitlog tears a 4 KiB page (zeros or garbage) in the
// middle of a stopped follower's commitlog: it must come back recovering,
// stay out of elections while the leader is away, then catch up.
func TestTornPageCommitlog(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	c := dledgertest.New(t, dledgertest.Options{Configure: fastConfig, MemFS: true})
	leader := c.WaitLeader(5 * time.Second)
	f1, f2 := (leader+1)%3, (leader+2)%3
	p, stop := background(t, c, 6)
	defer stop()
	waitAcks(t, c, p, 600)
	c.Kill(f1)
	c.Kill(leader)
	file, off := c.TearPage(f1, rng, dledgertest.Segment)
	t.Logf("tore %s at %d", file, off)
	c.Restart(f1)
	if x := c.Member(f1).Log.RecoveringThrough(); x == 0 {
		t.Fatalf("n%d is not recovering after a torn page", f1)
	}
	noLeader(t, c, 2*time.Second, f1, f2)
	c.Restart(leader)
	c.WaitLeader(10 * time.Second)
	waitAcks(t, c, p, len(p.acks())+100)
	stop()
	c.WaitConverged(20 * time.Second)
	checkAcked(t, c, p.acks())
	checkLogsIdentical(t, c)
}
