package dledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/raftmq/raftmq/dledger/dledgertest"
)

// Power loss: unlike a kill, a node whose power is cut loses every byte
// it had not fsynced (dledgertest.LosePower over an in-memory disk). A
// message is acknowledged only once a majority, the leader included, has
// fsynced it, so no acknowledged message may be lost when power goes on a
// minority — nor when it goes on every node at once.
func TestPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		name string
		who  func(c *dledgertest.Cluster, leader int) []int
	}{
		{"leader", func(_ *dledgertest.Cluster, l int) []int { return []int{l} }},
		{"follower", func(_ *dledgertest.Cluster, l int) []int { return []int{(l + 1) % 3} }},
		{"all nodes", func(_ *dledgertest.Cluster, l int) []int { return []int{l, (l + 1) % 3, (l + 2) % 3} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dledgertest.New(t, dledgertest.Options{Configure: fastConfig, MemFS: true})
			leader := c.WaitLeader(5 * time.Second)
			p, stop := background(t, c, 6)
			waitAcks(t, c, p, 200)
			victims := tc.who(c, leader)
			c.LosePower(victims...)
			acked := len(p.acks())
			t.Logf("power lost on %v with %d messages acknowledged", victims, acked)
			for _, i := range victims {
				c.Restart(i)
			}
			c.WaitLeader(10 * time.Second)
			waitAcks(t, c, p, acked+200) // the group takes writes again
			stop()
			c.WaitConverged(20 * time.Second)
			checkAcked(t, c, p.acks())
			checkQueuesIdentical(t, c)
			checkLogsIdentical(t, c)
		})
	}
}

// TestPowerLossRepeated cuts the power of every node, then of a random
// minority, over and over under load.
func TestPowerLossRepeated(t *testing.T) {
	c := dledgertest.New(t, dledgertest.Options{Configure: fastConfig, MemFS: true})
	c.WaitLeader(5 * time.Second)
	p, stop := background(t, c, 6)
	for round := range 4 {
		waitAcks(t, c, p, len(p.acks())+100)
		victims := []int{0, 1, 2}
		if round%2 == 1 {
			victims = []int{round % 3}
		}
		c.LosePower(victims...)
		for _, i := range victims {
			c.Restart(i)
		}
		c.WaitLeader(10 * time.Second)
	}
	waitAcks(t, c, p, len(p.acks())+100)
	stop()
	c.WaitConverged(20 * time.Second)
	checkAcked(t, c, p.acks())
	checkQueuesIdentical(t, c)
	checkLogsIdentical(t, c)
}

// waitAcks waits until p has at least n acknowledgements.
func waitAcks(t *testing.T, c *dledgertest.Cluster, p *proposer, n int) {
	t.Helper()
	c.Eventually(20*time.Second, func() error {
		if len(p.acks()) < n {
			return errors.New("waiting for acknowledgements")
		}
		return nil
	})
}
