package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// A fault is injected by inject, which returns the function that heals
// it; the schedule holds it for a random duration in between.
type fault struct {
	kind   string
	inject func(c *cluster, rng *rand.Rand, hold time.Duration) (heal func() error, err error)
}

// faults are the kinds a schedule draws from.
var faults = []fault{
	{"kill-leader", onLeader(killThenStart)},
	{"kill-follower", onFollower(killThenStart)},
	{"pause-leader", onLeader(pauseThenUnpause)},
	{"pause-follower", onFollower(pauseThenUnpause)},
	{"partition-leader", onLeader(disconnectThenConnect)},
	{"partition-follower", onFollower(disconnectThenConnect)},
	{"oneway-leader", onLeader(deafToPeers)},
	{"oneway-follower", onFollower(deafToPeers)},
	{"flap", onAny(flapLink)},
	{"disk-full", onAny(fillDisk)},
	{"membership", addRemoveVoter},
	{"clock-jump", jumpClocks},
}

// schedule is n faults from a seeded shuffle of every kind, repeated as
// needed, so a run of at least len(faults) steps injects each kind.
func schedule(rng *rand.Rand, n int) []fault {
	var out []fault
	for len(out) < n {
		p := rng.Perm(len(faults))
		for _, i := range p {
			out = append(out, faults[i])
		}
	}
	return out[:n]
}

// A nodeFault acts on one chosen node; others are the rest of the group.
type nodeFault func(c *cluster, n *node, others []*node, rng *rand.Rand, hold time.Duration) (func() error, error)

func onLeader(f nodeFault) func(*cluster, *rand.Rand, time.Duration) (func() error, error) {
	return func(c *cluster, rng *rand.Rand, hold time.Duration) (func() error, error) {
		l := c.leader()
		if l == nil {
			return nil, fmt.Errorf("chaos: no leader to fault")
		}
		c.t.Logf("  on %s (leader)", l.id)
		return f(c, l, c.followers(l), rng, hold)
	}
}

func onFollower(f nodeFault) func(*cluster, *rand.Rand, time.Duration) (func() error, error) {
	return func(c *cluster, rng *rand.Rand, hold time.Duration) (func() error, error) {
		l := c.leader()
		if l == nil {
			return nil, fmt.Errorf("chaos: no leader, so no follower to fault")
		}
		fs := c.followers(l)
		n := fs[rng.IntN(len(fs))]
		c.t.Logf("  on %s (follower)", n.id)
		return f(c, n, c.followers(n), rng, hold)
	}
}

func onAny(f nodeFault) func(*cluster, *rand.Rand, time.Duration) (func() error, error) {
	return func(c *cluster, rng *rand.Rand, hold time.Duration) (func() error, error) {
		n := c.nodes[rng.IntN(len(c.nodes))]
		c.t.Logf("  on %s (%s)", n.id, strings.ToLower(c.role(n)))
		return f(c, n, c.followers(n), rng, hold)
	}
}

func killThenStart(c *cluster, n *node, _ []*node, _ *rand.Rand, _ time.Duration) (func() error, error) {
	return func() error { return c.start(n) }, c.kill(n)
}

func pauseThenUnpause(c *cluster, n *node, _ []*node, _ *rand.Rand, _ time.Duration) (func() error, error) {
	return func() error { return c.unpause(n) }, c.pause(n)
}

func disconnectThenConnect(c *cluster, n *node, _ []*node, _ *rand.Rand, _ time.Duration) (func() error, error) {
	return func() error { return c.connect(n) }, c.disconnect(n)
}

// deafToPeers: the node hears nothing from the rest of the group but its
// packets still reach them (and the clients still reach it).
func deafToPeers(c *cluster, n *node, others []*node, _ *rand.Rand, _ time.Duration) (func() error, error) {
	return func() error { return c.flush(n) }, c.dropFrom(n, others...)
}

// flapLink cuts the node off its peers and back every 100–500 ms for the
// hold; the returned heal waits for the flapping to end.
func flapLink(c *cluster, n *node, others []*node, rng *rand.Rand, hold time.Duration) (func() error, error) {
	steps := make([]time.Duration, 0, 32)
	for total := time.Duration(0); total < hold; {
		d := time.Duration(100+rng.IntN(400)) * time.Millisecond
		steps = append(steps, d)
		total += d
	}
	done := make(chan error, 1)
	go func() {
		var err error
		for i, d := range steps {
			if i%2 == 0 {
				err = c.isolate(n, others...)
			} else {
				err = c.flush(n)
			}
			if err != nil {
				break
			}
			time.Sleep(d) // the link's state lasts d: a fault duration
		}
		done <- err
	}()
	return func() error {
		err := <-done
		if ferr := c.flush(n); err == nil {
			err = ferr
		}
		return err
	}, nil
}

// fillDisk fills the node's small file system to the last block; the node
// refuses writes past its 90 % guard, and a write that meets ENOSPC makes
// it exit for Docker to restart.
func fillDisk(c *cluster, n *node, _ []*node, _ *rand.Rand, _ time.Duration) (func() error, error) {
	if n.disk == nil {
		return func() error { return nil }, fmt.Errorf("chaos: %s has no small disk", n.id)
	}
	err := n.disk.fill()
	c.t.Logf("  %s's disk %.1f%% used", n.id, 100*n.disk.usage())
	return n.disk.free, err
}

// jumpClocks steps the wall clock of one node, or of every node at once
// (one time in three), 5 s to 5 min forward or back; the heal steps it
// back to the real time. raft's timers and the clients' timeouts run on
// the monotonic clock; store timestamps and the due times of delayed
// messages (the load sends some) run on the wall clock.
func jumpClocks(c *cluster, rng *rand.Rand, _ time.Duration) (func() error, error) {
	d := time.Duration(5_000+rng.IntN(295_000)) * time.Millisecond
	if rng.IntN(2) == 0 {
		d = -d
	}
	nodes := c.nodes
	if rng.IntN(3) != 0 {
		nodes = []*node{c.nodes[rng.IntN(len(c.nodes))]}
	}
	heal := func() error {
		var first error
		for _, n := range nodes {
			if err := c.stepClock(n, 0); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for _, n := range nodes {
		c.t.Logf("  %s's clock (%s) stepped %v", n.id, strings.ToLower(c.role(n)), d)
		if err := c.stepClock(n, d); err != nil {
			return heal, err
		}
	}
	return heal, nil
}
