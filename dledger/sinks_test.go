package dledger_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftmq/raftmq/consumequeue"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/dledger/dledgertest"
)

// TestConsumeQueueFilesByteIdentical dispatches to real consumequeue
// stores and compares their files across the three nodes, before and
// after a node restarts and replays its log into its existing store.
func TestConsumeQueueFilesByteIdentical(t *testing.T) {
	dirs := make([]string, 3)
	stores := make([]*consumequeue.Store, 3)
	for i := range stores {
		dirs[i] = t.TempDir()
		cfg := consumequeue.DefaultConfig()
		cfg.Dir = dirs[i]
		cfg.EntriesPerFile = 500
		s, err := consumequeue.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
		t.Cleanup(func() { _ = s.Close() })
	}
	c := dledgertest.New(t, dledgertest.Options{Configure: func(i int, cfg *dledger.Config) {
		fastConfig(i, cfg)
		cfg.QueueSink = dledger.ConsumeQueueSink{Store: stores[i]}
	}})
	c.WaitLeader(5 * time.Second)
	p := &proposer{t: t, c: c}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p.sendMany(ctx, 2000, 32, []string{"a", "b"}, 3)
	c.WaitConverged(10 * time.Second)
	compareDirs(t, stores, dirs)

	c.Kill(2)
	p.sendMany(ctx, 300, 8, []string{"a", "b"}, 3)
	c.Restart(2) // replays every entry into a store that already holds most
	c.WaitConverged(10 * time.Second)
	compareDirs(t, stores, dirs)
	if q, ok := stores[2].Lookup("a", 0); !ok || q.MaxOffset() == 0 {
		t.Fatal("restarted node's queue a/0 is empty")
	}
}

func compareDirs(t *testing.T, stores []*consumequeue.Store, dirs []string) {
	t.Helper()
	for _, s := range stores {
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	ref := readTree(t, dirs[0])
	if len(ref) == 0 {
		t.Fatal("no consumequeue files")
	}
	for i, d := range dirs[1:] {
		got := readTree(t, d)
		if len(got) != len(ref) {
			t.Fatalf("node %d has %d files, node 0 %d", i+1, len(got), len(ref))
		}
		for name, b := range ref {
			if !bytes.Equal(got[name], b) {
				t.Fatalf("node %d: %s differs from node 0", i+1, name)
			}
		}
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
