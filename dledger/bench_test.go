package dledger_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/dledger/dledgertest"
	"github.com/raftmq/raftmq/internal/vfs"
)

// countingFS counts fsyncs of one node's commitlog.
func countingFS(n *atomic.Int64) vfs.FS {
	f := vfs.NewFaultFS(vfs.OS)
	f.Inject(vfs.InjectorFunc(func(op vfs.Op, _ string, bytes int) (int, error) {
		if op == vfs.OpSync || op == vfs.OpSyncDir {
			n.Add(1)
		}
		return bytes, nil
	}))
	return f
}

// BenchmarkReplication sends 1 KiB messages from many concurrent
// proposers through a 3-node group over loopback TCP, commitlog in
// SYNC_FLUSH on the test's temp dir.
func BenchmarkReplication(b *testing.B) {
	for _, r := range []struct{ proposers, inflight int }{{16, 4}, {256, 1}, {256, 4}, {256, 16}} {
		b.Run("proposers="+itoa(r.proposers)+"/inflight="+itoa(r.inflight), func(b *testing.B) { benchReplication(b, r.proposers, r.inflight) })
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func benchReplication(b *testing.B, proposers, inflight int) {
	syncs := make([]atomic.Int64, 3)
	c := dledgertest.New(b, dledgertest.Options{TCP: true, Configure: func(i int, cfg *dledger.Config) {
		cfg.MaxInflight = inflight
	}, ConfigureLog: func(i int, cc *commitlog.Config) {
		cc.FS = countingFS(&syncs[i])
		cc.SegmentSize = 256 << 20
	}})
	l := c.Node(c.WaitLeader(5 * time.Second))
	body := make([]byte, 1024-150) // record ≈ 1 KiB with the stored-layout header
	startIdx := l.Raft().LastIndex()
	var startSyncs int64
	for i := range syncs {
		startSyncs += syncs[i].Load()
	}
	var sent atomic.Int64
	var wg sync.WaitGroup
	b.SetBytes(1024)
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < proposers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for sent.Add(1) <= int64(b.N) {
				rec := record(b, "bench", int32(w%8), body)
				_, err := l.Propose(context.Background(), &dledger.PutMessagesCommand{Messages: []dledger.Message{{Topic: "bench", QueueID: int32(w % 8), Record: rec}}})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	entries := l.Raft().LastIndex() - startIdx
	var total int64
	for i := range syncs {
		total += syncs[i].Load()
	}
	total -= startSyncs
	b.ReportMetric(float64(b.N)/el.Seconds(), "msgs/s")
	b.ReportMetric(float64(b.N)/float64(max(entries, 1)), "msgs/entry")
	b.ReportMetric(float64(total)/3/el.Seconds(), "fsyncs/s/node")
}

// BenchmarkRawFsync is the disk's own rate of 4 KiB append + fsync, the
// ceiling for SYNC_FLUSH entries per second on one node.
func BenchmarkRawFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "fsyncs/s")
}
