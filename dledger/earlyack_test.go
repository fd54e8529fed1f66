package dledger_test

import (
	"testing"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/dledger/dledgertest"
)

// TestEarlyAckPowerLoss: puts answered as soon as their entry is durable on
// a majority (before the leader applied them) survive a power loss of the
// leader, of a follower and of every node at once; and some answers did
// come early, so the test exercises what it claims to.
func TestEarlyAckPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		name string
		who  func(leader int) []int
	}{
		{"leader", func(l int) []int { return []int{l} }},
		{"follower", func(l int) []int { return []int{(l + 1) % 3} }},
		{"all nodes", func(l int) []int { return []int{l, (l + 1) % 3, (l + 2) % 3} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dledgertest.New(t, dledgertest.Options{TCP: true, Configure: slowApply, MemFS: true})
			leader := c.WaitLeader(5 * time.Second)
			p, stop := backgroundOf(t, c, 6, true)
			waitAcks(t, c, p, 300)
			victims := tc.who(leader)
			c.LosePower(victims...)
			acked, early := len(p.acks()), p.early.Load()
			t.Logf("power lost on %v with %d messages acknowledged, %d of them before the leader applied them", victims, acked, early)
			if early == 0 {
				t.Error("no answer came before the leader applied its entry")
			}
			for _, i := range victims {
				c.Restart(i)
			}
			c.WaitLeader(10 * time.Second)
			waitAcks(t, c, p, acked+200)
			stop()
			c.WaitConverged(20 * time.Second)
			checkAcked(t, c, p.acks())
			checkQueuesIdentical(t, c)
		})
	}
}

// TestNoEarlyAckUnlessAsked: without EarlyAck, or with Config.NoEarlyAck,
// no put is answered before the leader applied it.
func TestNoEarlyAckUnlessAsked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		early bool
		cfg   func(int, *dledger.Config)
	}{
		{"not asked", false, slowApply},
		{"NoEarlyAck", true, func(i int, c *dledger.Config) { slowApply(i, c); c.NoEarlyAck = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dledgertest.New(t, dledgertest.Options{TCP: true, Configure: tc.cfg})
			c.WaitLeader(5 * time.Second)
			p, stop := backgroundOf(t, c, 6, tc.early)
			waitAcks(t, c, p, 300)
			stop()
			if n := p.early.Load(); n != 0 {
				t.Fatalf("%d of %d answers came before the leader applied them", n, len(p.acks()))
			}
		})
	}
}

// slowApply is fastConfig with every put entry's dispatch taking 2 ms
// more, an FSM that lags replication: answers that do not wait for it
// come before it, deterministically.
func slowApply(i int, c *dledger.Config) {
	fastConfig(i, c)
	c.Dispatcher = slowDispatcher{c.Dispatcher}
}

type slowDispatcher struct{ dledger.Dispatcher }

// Dispatch stores first, then takes its time, so what it stored never
// lags the FSM's counters (raft counts an entry applied once it handed it
// to the FSM, which the harness's convergence check reads).
func (d slowDispatcher) Dispatch(index uint64, msgs []dledger.AppliedMessage) error {
	err := d.Dispatcher.Dispatch(index, msgs)
	time.Sleep(2 * time.Millisecond) // the slow FSM being simulated
	return err
}
