package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// addRemoveVoter adds a fourth node to the group with the admin CLI while
// a follower is paused; the returned heal thaws the follower and removes
// the fourth node again with the CLI.
func addRemoveVoter(c *cluster, rng *rand.Rand, _ time.Duration) (func() error, error) {
	l := c.leader()
	if l == nil {
		return nil, fmt.Errorf("chaos: no leader for a membership change")
	}
	fs := c.followers(l)
	paused := fs[rng.IntN(len(fs))]
	n4 := &node{id: "n4", name: c.prefix + "-n4", ip: c.net.ip(14)}
	var peers []string
	for _, n := range append(append([]*node(nil), c.nodes...), n4) {
		peers = append(peers, n.id+"/"+n.raftAddr()+"/"+n.addr())
	}
	c.startBroker(n4, strings.Join(peers, ","), true, c.t.TempDir())
	if err := c.pause(paused); err != nil {
		return nil, err
	}
	err := c.retryCLI(30*time.Second, "cluster", "add-voter", "--namesrv", c.nsAddr,
		"--broker-name", brokerGroup, "--id", n4.id, "--raft-addr", n4.raftAddr())
	if err != nil {
		_ = c.unpause(paused)
		return nil, err
	}
	c.nodes = append(c.nodes, n4)
	c.t.Logf("  added %s while %s is paused", n4.id, paused.id)
	return func() error { return c.removeVoter(n4, paused) }, nil
}

// removeVoter thaws the paused follower and removes n4 again.
func (c *cluster) removeVoter(n4, paused *node) error {
	if err := c.unpause(paused); err != nil {
		return err
	}
	c.waitHealthy(60 * time.Second)
	err := c.retryCLI(30*time.Second, "cluster", "remove", "--namesrv", c.nsAddr,
		"--broker-name", brokerGroup, "--id", n4.id)
	if err != nil {
		return err
	}
	c.nodes = c.nodes[:len(c.nodes)-1]
	c.t.Logf("  removed %s", n4.id)
	_, err = docker("rm", "-f", n4.name)
	return err
}

// retryCLI runs an admin command until it succeeds or d passes (a change
// asked during an election is refused; the operator asks again).
func (c *cluster) retryCLI(d time.Duration, args ...string) error {
	var err error
	ok := poll(d, func() bool {
		_, err = c.cli(args...)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
		}
		return err == nil
	})
	if !ok {
		return err
	}
	return nil
}
