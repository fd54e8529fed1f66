package store_test

import (
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/raftmq/raftmq/internal/vfs"
	"github.com/raftmq/raftmq/store"
)

// TestConsumeQueueWaitsForSpace: a consumequeue write on one node that
// meets a full disk (ENOSPC) makes that node wait — it applies nothing,
// it does not stop — while the group goes on; once space returns it
// applies what it missed by itself and its queues match the others'.
// Before, the failed write stopped the node as diverged, and its restart
// met the same full disk.
func TestConsumeQueueWaitsForSpace(t *testing.T) {
	var disks [3]*vfs.FaultFS
	var opened atomic.Int32
	g := startGroup(t, 3, func(c *store.Config) {
		i := opened.Add(1) - 1 // stores open in node order at start
		disks[i] = vfs.NewFaultFS(vfs.OS)
		c.ConsumeQueue.FS = disks[i]
	})
	g.send(t, "a", 2, 50, "tag")
	g.c.WaitConverged(10 * time.Second)
	leader := g.c.WaitLeader(5 * time.Second)
	victim := (leader + 1) % 3
	other := 3 - leader - victim
	disks[victim].Inject(vfs.FailAfter(vfs.OpWrite, "", 0, syscall.ENOSPC))
	g.send(t, "a", 2, 50, "tag")
	// The others applied the 50; the victim holds its queues where they were.
	g.c.Eventually(10*time.Second, func() error {
		for _, i := range []int{leader, other} {
			if got := g.store(i).MaxOffset("a", 0); got != 50 {
				return errors.New("waiting for the healthy nodes to apply")
			}
		}
		return nil
	})
	if got := g.store(victim).MaxOffset("a", 0); got != 25 {
		t.Fatalf("the node with a full disk holds queue a/0 up to %d, want 25", got)
	}
	if err := g.c.Node(victim).Err(); err != nil {
		t.Fatalf("the node with a full disk stopped: %v", err)
	}
	disks[victim].Inject(nil) // space is back
	g.send(t, "a", 2, 10, "tag")
	g.c.WaitConverged(10 * time.Second)
	if err := g.c.Node(victim).Err(); err != nil {
		t.Fatalf("n%d stopped: %v", victim, err)
	}
	if got := g.store(victim).MaxOffset("a", 0); got != 55 {
		t.Fatalf("n%d holds queue a/0 up to %d after space returned, want 55", victim, got)
	}
	g.compareQueues(t)
}
