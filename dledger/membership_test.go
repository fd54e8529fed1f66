package dledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/commitlog"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/dledger/dledgertest"
)

// TestAddVoterPromotesOnlyOnceCaughtUp: a node added while it cannot be
// replicated to (here: cut off, with another follower down) must not
// count towards the quorum. Added straight as a voter, the configuration
// of four would need three of them while only two answer: writes stop
// and the change never commits. In raft's safe order it joins as a
// non-voter, AddVoter reports it catching up, writes go on, and asking
// again once it is reachable promotes it.
func TestAddVoterPromotesOnlyOnceCaughtUp(t *testing.T) {
	c := dledgertest.New(t, dledgertest.Options{Configure: fastConfig})
	li := c.WaitLeader(5 * time.Second)
	p, stop := background(t, c, 4)
	defer stop()
	waitAcks(t, c, p, 50)
	down := -1
	for _, i := range c.Live() {
		if i != li {
			down = i
			break
		}
	}
	c.Kill(down)
	nw := c.AddMember()
	c.Partition(nw)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err := c.Node(li).AddVoter(ctx, c.Member(nw).ID, c.Member(nw).Addr)
	cancel()
	if !errors.Is(err, dledger.ErrCatchingUp) {
		t.Fatalf("AddVoter of an unreachable node: %v, want ErrCatchingUp", err)
	}
	if m, err := c.Node(li).Members(); err != nil || len(m) != 3 {
		t.Fatalf("voters while the new node catches up: %v, %v (want the 3 of before)", m, err)
	}
	// Two of three voters answer: the group still writes.
	waitAcks(t, c, p, 50)

	c.Heal()
	c.Restart(down)
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.Eventually(15*time.Second, func() error {
		l := c.Node(c.WaitLeader(5 * time.Second))
		return l.AddVoter(ctx, c.Member(nw).ID, c.Member(nw).Addr)
	})
	if m, err := c.Node(c.WaitLeader(5 * time.Second)).Members(); err != nil || len(m) != 4 {
		t.Fatalf("voters after the promotion: %v, %v", m, err)
	}
	waitAcks(t, c, p, 50)
	stop()
	c.WaitConverged(10 * time.Second)
	checkAcked(t, c, p.acks())
	checkQueuesIdentical(t, c)
}

// TestFollowerBackFromOutageReplicatedAtOnce: a follower down for 6 s is
// replicated to again as soon as it is back. hashicorp/raft alone doubles
// its pause after every failed AppendEntries (10 ms up to 10 s), so after
// 6 s of failures it waited seconds more before trying the returned
// follower: had the other follower failed then, the group would have
// stopped writing for that long.
func TestFollowerBackFromOutageReplicatedAtOnce(t *testing.T) {
	c := dledgertest.New(t, dledgertest.Options{Configure: fastConfig})
	li := c.WaitLeader(5 * time.Second)
	p, stop := background(t, c, 4)
	defer stop()
	waitAcks(t, c, p, 50)
	down := (li + 1) % 3
	c.Kill(down)
	time.Sleep(6 * time.Second) // the outage itself: what raft's backoff grows over
	c.Restart(down)
	back := time.Now()
	target := c.Node(li).AppliedIndex()
	c.Eventually(10*time.Second, func() error {
		if got := c.Node(down).AppliedIndex(); got < target {
			return fmt.Errorf("n%d applied %d of %d", down, got, target)
		}
		return nil
	})
	took := time.Since(back)
	t.Logf("n%d caught up %v after its restart", down, took)
	if took > 2*time.Second {
		t.Errorf("n%d caught up only %v after it was back: the leader was still backing off", down, took)
	}
	stop()
	c.WaitConverged(10 * time.Second)
	checkAcked(t, c, p.acks())
}

// TestNoCampaignWhileDiskFull: a node whose log refuses writes for lack of
// space never leads while full (TestVoteGuardFullLogDoesNotCampaign has the
// mechanism): a leadership transfer to it fails (raft waits for a target
// to catch up, which a full node cannot) and the group keeps writing under
// its leader; once space returns the node catches up.
func TestNoCampaignWhileDiskFull(t *testing.T) {
	var free [3]atomic.Int64
	var ledFull [3]atomic.Int32 // times a node became leader while full
	for i := range free {
		free[i].Store(1 << 40)
	}
	configure := func(i int, cfg *dledger.Config) {
		fastConfig(i, cfg)
		cfg.OnLeaderChange = func(ev dledger.LeaderEvent) {
			if ev.IsLeader && free[i].Load() == 0 {
				ledFull[i].Add(1)
			}
		}
	}
	c := dledgertest.New(t, dledgertest.Options{Configure: configure, ConfigureLog: func(i int, cc *commitlog.Config) {
		cc.Retention.MinFreeBytes = 1 << 20
		cc.Retention.FreeBytes = func(string) (int64, error) { return free[i].Load(), nil }
	}})
	li := c.WaitLeader(5 * time.Second)
	p, stop := background(t, c, 4)
	defer stop()
	waitAcks(t, c, p, 50)
	full := (li + 1) % 3
	free[full].Store(0)
	c.Eventually(5*time.Second, func() error {
		if c.Member(full).Log.SpaceRefusal() == nil {
			return errors.New("space check has not run yet")
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Node(li).TransferLeadership(ctx, c.Member(full).ID)
	if err == nil {
		t.Fatalf("leadership transferred to n%d, whose disk is full", full)
	}
	t.Logf("transfer to the full node refused: %v", err)
	waitAcks(t, c, p, 50)
	if n := ledFull[full].Load(); n != 0 {
		t.Fatalf("n%d became leader %d times with a full disk", full, n)
	}
	free[full].Store(1 << 40)
	stop()
	c.WaitConverged(10 * time.Second)
	checkAcked(t, c, p.acks())
}
