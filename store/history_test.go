package store_test

import (
	"testing"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/store"
)

// TestSnapshotInstallCarriesHistory (issue 13, path 1): a store whose node
// catches up by snapshot after the others' retention deleted the log it
// needed rebuilds its consumequeues and index from the history the
// snapshot carries, so it serves every message the others still hold.
func TestSnapshotInstallCarriesHistory(t *testing.T) {
	g := startGroupWith(t, 3, func(c *dledger.Config) {
		c.TrailingLogs = 5
		c.SnapshotThreshold = 1 << 30 // only explicit snapshots
	}, func(c *store.Config) {
		c.CommitLog.SegmentSize = 16 << 10
		c.CommitLog.Retention.FileReservedTime = time.Nanosecond
		c.CommitLog.Retention.DiskUsage = func(string) (float64, error) { return 0.8, nil }
		c.CommitLog.Retention.CheckInterval = 0
	})
	g.send(t, "a", 2, 200, "")
	lag := (g.c.WaitLeader(5*time.Second) + 1) % 3
	g.c.Kill(lag)
	sent := g.send(t, "a", 2, 600, "")
	for _, i := range g.c.Live() {
		if err := g.c.Node(i).SnapshotNow(); err != nil {
			t.Fatal(err)
		}
		if _, err := g.store(i).Log().RunRetentionOnce(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	held := int64(-1) // the highest first commit offset the others hold
	for _, i := range g.c.Live() {
		co, err := g.store(i).MinCommitOffset()
		if err != nil {
			t.Fatal(err)
		}
		held = max(held, co)
	}
	if first, _ := g.store((lag + 1) % 3).Log().FirstIndex(); first <= 2 {
		t.Fatalf("retention kept the whole log (first index %d): no install needed", first)
	}
	g.c.Restart(lag)
	g.c.WaitConverged(15 * time.Second)
	s := g.store(lag)
	n := 0
	for i, m := range sent {
		if m.CommitOffset < held {
			continue
		}
		n++
		q := int32(i % 2)
		entries, _, err := s.ReadEntries("a", q, m.QueueOffset, 1, nil)
		if err != nil || len(entries) != 1 || entries[0].CommitOffset != m.CommitOffset {
			t.Fatalf("a/%d@%d (commit offset %d, held from %d): entries %+v, %v (queue %d..%d)",
				q, m.QueueOffset, m.CommitOffset, held, entries, err, s.MinOffset("a", q), s.MaxOffset("a", q))
		}
		if _, err := s.ReadMessage(m.CommitOffset, int(entries[0].Size)); err != nil {
			t.Fatalf("a/%d@%d: %v", q, m.QueueOffset, err)
		}
	}
	if n < 50 {
		t.Fatalf("only %d sent messages at or above %d: the test proves little", n, held)
	}
	last := sent[len(sent)-1]
	key := store.IndexKey("a", "k-a-599")
	if offs, err := s.QueryIndex(key, 0, time.Now().Add(time.Hour).UnixMilli(), 4); err != nil || len(offs) != 1 || offs[0] != last.CommitOffset {
		t.Fatalf("index on the installed node: %v, %v; want [%d]", offs, err, last.CommitOffset)
	}
	for _, i := range g.c.Live() {
		for q := int32(0); q < 2; q++ {
			if got, want := g.store(i).MaxOffset("a", q), s.MaxOffset("a", q); got != want {
				t.Errorf("a/%d ends at %d on n%d, at %d on the installed node", q, got, i, want)
			}
		}
	}
}
