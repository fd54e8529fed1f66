package store_test

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/raftmq/raftmq/dledger/dledgertest"
	"github.com/raftmq/raftmq/store"
)

// TestTornPageConsumeQueue tears a 4 KiB page (zeros or garbage) in a
// consumequeue file of a stopped follower whose raft replay starts after a
// snapshot, so the replay alone cannot repair it: the store must find the
// damage at Open, cut the queue there and rebuild it from the commitlog —
// never stop the node, never serve the torn entries.
func TestTornPageConsumeQueue(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			logger := dledgertest.TestLogger(t)
			g := startGroup(t, 3, func(c *store.Config) { c.Logger = logger })
			g.send(t, "a", 2, 1500, "tag")
			g.c.WaitConverged(10 * time.Second)
			victim := (g.c.WaitLeader(5*time.Second) + 1) % 3
			if err := g.c.Node(victim).SnapshotNow(); err != nil {
				t.Fatal(err)
			}
			g.c.Kill(victim)
			file, off := g.c.TearPage(victim, rng, dledgertest.ConsumeQueue)
			t.Logf("tore %s at %d", file, off)
			g.send(t, "a", 2, 20, "tag")
			g.c.Restart(victim)
			g.send(t, "a", 2, 20, "tag")
			g.c.WaitConverged(10 * time.Second)
			if err := g.c.Node(victim).Err(); err != nil {
				t.Fatalf("n%d stopped: %v", victim, err)
			}
			g.compareQueues(t)
		})
	}
}
