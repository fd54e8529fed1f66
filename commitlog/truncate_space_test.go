package commitlog

import (
	"errors"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/vfs"
)

// retermed is [from, to] as a new leader's entries: same indexes, another
// term, so they conflict with makeRange's.
func retermed(from, to uint64) []*raft.Log {
	logs := makeRange(from, to)
	for _, lg := range logs {
		lg.Term += 100
		lg.Data = append(lg.Data, 'x')
	}
	return logs
}

// TestSuffixNotTruncatedWhileFull: raft truncates a follower's conflicting
// suffix and then stores the leader's entries, and believes in the old
// suffix until both succeed. On a full disk the store is refused, so the
// truncation must be too: the log keeps the suffix raft believes in, and
// once space returns truncation and store both go through.
func TestSuffixNotTruncatedWhileFull(t *testing.T) {
	var free atomic.Int64
	free.Store(1 << 30)
	cfg := testConfig(vfs.NewMem(), testDir)
	cfg.Retention.MinFreeBytes = 1 << 20
	cfg.Retention.FreeBytes = func(string) (int64, error) { return free.Load(), nil }
	l := mustOpen(t, cfg)
	defer closeLog(t, l)
	storeRange(t, l, 1, 20, 5)

	free.Store(0)
	l.checkSpace()
	if err := l.DeleteRange(15, 20); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("DeleteRange of a suffix on a full disk = %v, want an ErrNoSpace refusal", err)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("a refused truncation made the log fail: %v", err)
	}
	checkRange(t, l, 1, 20)

	free.Store(1 << 30)
	l.checkSpace()
	if err := l.DeleteRange(15, 20); err != nil {
		t.Fatalf("DeleteRange once space returned: %v", err)
	}
	if err := l.StoreLogs(retermed(15, 22)); err != nil {
		t.Fatalf("StoreLogs after the truncation: %v", err)
	}
	checkHolds(t, l, append(makeRange(1, 14), retermed(15, 22)...))
}

// checkHolds checks that l holds exactly want, in order.
func checkHolds(t *testing.T, l *Log, want []*raft.Log) {
	t.Helper()
	last, err := l.LastIndex()
	if err != nil || last != want[len(want)-1].Index {
		t.Fatalf("LastIndex = %d, %v; want %d", last, err, want[len(want)-1].Index)
	}
	for _, w := range want {
		var got raft.Log
		if err := l.GetLog(w.Index, &got); err != nil {
			t.Fatalf("GetLog %d: %v", w.Index, err)
		}
		if err := sameLog(&got, w); err != nil {
			t.Fatalf("index %d: %v", w.Index, err)
		}
	}
}

// TestStoreFailingAfterTruncationFailsLog: when the store right after a
// suffix truncation fails, even for lack of space (the disk filled in
// between), raft still believes in the truncated entries, so the log fails
// for good: the process restarts and raft reads the real end. A reopen
// finds the log cut where raft cut it and takes the leader's entries.
func TestStoreFailingAfterTruncationFailsLog(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	l := mustOpen(t, testConfig(ffs, testDir))
	defer l.Close()
	storeRange(t, l, 1, 20, 5)
	if err := l.DeleteRange(15, 20); err != nil {
		t.Fatalf("DeleteRange: %v", err)
	}
	ffs.Inject(vfs.FailOnce(vfs.OpWrite, ".log", syscall.ENOSPC))
	if err := l.StoreLogs(retermed(15, 18)); err == nil {
		t.Fatal("StoreLogs with ENOSPC succeeded")
	}
	ffs.Inject(nil)
	if l.Err() == nil {
		t.Fatal("a failed store after a suffix truncation did not fail the log")
	}
	select {
	case <-l.Failed():
	default:
		t.Fatal("Failed is not closed")
	}
	if err := l.StoreLogs(retermed(15, 18)); !errors.Is(err, ErrFailed) {
		t.Fatalf("StoreLogs after the failure = %v, want ErrFailed", err)
	}

	reopened := mustOpen(t, testConfig(killClone(t, mem), testDir))
	defer closeLog(t, reopened)
	checkRange(t, reopened, 1, 14)
	if err := reopened.StoreLogs(retermed(15, 18)); err != nil {
		t.Fatalf("StoreLogs after the reopen: %v", err)
	}
	checkHolds(t, reopened, append(makeRange(1, 14), retermed(15, 18)...))
}

// TestStoreAfterTruncationThenRefusalsAreRefusals: once the store after a
// truncation went through, a later ENOSPC is an ordinary refusal again.
func TestStoreAfterTruncationThenRefusalsAreRefusals(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.NewMem())
	l := mustOpen(t, testConfig(ffs, testDir))
	defer closeLog(t, l)
	storeRange(t, l, 1, 20, 5)
	if err := l.DeleteRange(15, 20); err != nil {
		t.Fatalf("DeleteRange: %v", err)
	}
	if err := l.StoreLogs(retermed(15, 16)); err != nil {
		t.Fatalf("StoreLogs after the truncation: %v", err)
	}
	ffs.Inject(vfs.FailOnce(vfs.OpWrite, ".log", syscall.ENOSPC))
	assertRefused(t, l, l.StoreLogs(retermed(17, 18)))
}
