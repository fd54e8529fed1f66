package store_test

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
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

// TestTornPageIndex tears a 4 KiB page (header, slots or entries; zeros
// or garbage) of a stopped follower's key index: Open must find it and
// rebuild the index from the commitlog, so every message is found by its
// key again — a torn header used to fail Open, torn slots or entries
// silently lost keys.
func TestTornPageIndex(t *testing.T) {
	// Seeds 15 and 16 tear the first page (header and slots) with garbage
	// and zeros, 1 and 2 pages of entries.
	for _, seed := range []int64{1, 2, 15, 16} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			logger := dledgertest.TestLogger(t)
			g := startGroup(t, 3, func(c *store.Config) { c.Logger = logger })
			sent := g.send(t, "a", 2, 1500, "")
			g.c.WaitConverged(10 * time.Second)
			victim := (g.c.WaitLeader(5*time.Second) + 1) % 3
			if err := g.c.Node(victim).SnapshotNow(); err != nil {
				t.Fatal(err)
			}
			g.c.Kill(victim)
			file, off := g.c.TearPage(victim, rng, dledgertest.Index)
			t.Logf("tore %s at %d", file, off)
			g.c.Restart(victim)
			sent = append(sent, g.send(t, "a", 2, 20, "")...)
			g.c.WaitConverged(10 * time.Second)
			if err := g.c.Node(victim).Err(); err != nil {
				t.Fatalf("n%d stopped: %v", victim, err)
			}
			s := g.store(victim)
			for i, r := range sent {
				key := store.IndexKey("a", fmt.Sprintf("k-a-%d", i%1500))
				if i >= 1500 {
					key = store.IndexKey("a", fmt.Sprintf("k-a-%d", i-1500))
				}
				got, err := s.QueryIndex(key, 0, math.MaxInt64, 64)
				if err != nil || !slices.Contains(got, r.CommitOffset) {
					t.Fatalf("n%d: key %s of message %d (commit offset %d) not found: %v, %v", victim, key, i, r.CommitOffset, got, err)
				}
			}
			g.compareQueues(t)
		})
	}
}
