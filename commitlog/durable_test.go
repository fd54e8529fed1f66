package commitlog

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/internal/vfs"
)

// gatedSyncs holds every fsync of a segment file until released, so a
// test sees what is durable while a deferred sync is in flight.
type gatedSyncs struct {
	gate    chan struct{}
	started chan struct{}
	fail    atomic.Bool
}

func newGatedSyncs() *gatedSyncs {
	return &gatedSyncs{gate: make(chan struct{}), started: make(chan struct{}, 64)}
}

func (g *gatedSyncs) MaybeFail(op vfs.Op, name string, n int) (int, error) {
	if op != vfs.OpSync || !strings.HasSuffix(name, segmentExt) {
		return n, nil
	}
	g.started <- struct{}{}
	<-g.gate
	if g.fail.Load() {
		return 0, vfs.ErrInjected
	}
	return n, nil
}

func openDeferred(t *testing.T, defer_ *atomic.Bool) (*Log, *vfs.MemFS, *vfs.FaultFS) {
	t.Helper()
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	cfg := testConfig(ffs, testDir)
	cfg.SegmentSize = 1 << 20
	cfg.DeferSync = defer_.Load
	return mustOpen(t, cfg), mem, ffs
}

func TestDeferredSync(t *testing.T) {
	var deferOn atomic.Bool
	deferOn.Store(true)
	l, mem, ffs := openDeferred(t, &deferOn)
	g := newGatedSyncs()
	ffs.Inject(g)

	// StoreLogs returns while its fsync is still held: the batch is
	// written, readable, and not durable.
	storeRange(t, l, 1, 5, 5)
	<-g.started
	if got := l.DurableIndex(); got != 0 {
		t.Fatalf("DurableIndex during the held sync = %d, want 0", got)
	}
	if last, _ := l.LastIndex(); last != 5 {
		t.Fatalf("LastIndex = %d, want 5", last)
	}
	if n := countEntries(t, mem.CrashClone()); n != 0 {
		t.Fatalf("a crash now keeps %d entries, want 0", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if err := l.WaitDurable(ctx, 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitDurable before the sync = %v, want deadline exceeded", err)
	}
	cancel()

	// Batches written during the held sync share the next one.
	storeRange(t, l, 6, 8, 1)
	g.gate <- struct{}{}
	if err := l.WaitDurable(context.Background(), 5); err != nil {
		t.Fatalf("WaitDurable(5): %v", err)
	}
	<-g.started
	g.gate <- struct{}{}
	if err := l.WaitDurable(context.Background(), 8); err != nil {
		t.Fatalf("WaitDurable(8): %v", err)
	}
	if n := countEntries(t, mem.CrashClone()); n != 8 {
		t.Fatalf("a crash after WaitDurable(8) keeps %d entries, want 8", n)
	}

	// Not deferred (a follower): StoreLogs syncs itself and everything
	// written before.
	deferOn.Store(false)
	ffs.Inject(nil)
	storeRange(t, l, 9, 9, 1)
	if got := l.DurableIndex(); got != 9 {
		t.Fatalf("DurableIndex after a synced StoreLogs = %d, want 9", got)
	}

	// Truncation lowers it.
	if err := l.DeleteRange(7, 9); err != nil {
		t.Fatal(err)
	}
	if got := l.DurableIndex(); got != 6 {
		t.Fatalf("DurableIndex after truncating to 6 = %d, want 6", got)
	}
	closeLog(t, l)
}

func TestDeferredSyncFailureIsSticky(t *testing.T) {
	var deferOn atomic.Bool
	deferOn.Store(true)
	l, _, ffs := openDeferred(t, &deferOn)
	g := newGatedSyncs()
	g.fail.Store(true)
	ffs.Inject(g)
	storeRange(t, l, 1, 3, 3)
	<-g.started
	close(g.gate)
	if err := l.WaitDurable(context.Background(), 3); !errors.Is(err, ErrFailed) {
		t.Fatalf("WaitDurable after a failed deferred sync = %v, want ErrFailed", err)
	}
	if err := l.StoreLogs(makeRange(4, 4)); !errors.Is(err, ErrFailed) {
		t.Fatalf("StoreLogs after a failed deferred sync = %v, want ErrFailed", err)
	}
	if got := l.DurableIndex(); got != 0 {
		t.Fatalf("DurableIndex = %d, want 0", got)
	}
	expectFailed(t, l)
	ffs.Inject(nil)
	_ = l.Close()
	expectUncleanClose(t, ffs)
}

// expectFailed checks that l reports its sticky failure.
func expectFailed(t *testing.T, l *Log) {
	t.Helper()
	select {
	case <-l.Failed():
	default:
		t.Fatal("Failed not closed after a failed fsync")
	}
	if l.Err() == nil {
		t.Fatal("Err is nil after a failed fsync")
	}
}

// expectUncleanClose checks that a log closed after a failure left its
// abort file: the next Open scans as after a crash instead of trusting a
// checkpoint written over bytes of unknown fate.
func expectUncleanClose(t *testing.T, fsys vfs.FS) {
	t.Helper()
	if _, err := fsys.Stat(testDir + "/" + abortName); err != nil {
		t.Fatalf("abort file removed by Close after a failed fsync: %v", err)
	}
}

// TestAsyncFlushFailureIsSticky: in AsyncFlush a failed background fsync
// is not retried (a retry may falsely succeed after the kernel dropped the
// pages): the log refuses writes, reports it, and closes unclean.
func TestAsyncFlushFailureIsSticky(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	cfg := testConfig(ffs, testDir)
	cfg.FlushMode, cfg.FlushInterval = AsyncFlush, 5*time.Millisecond
	l := mustOpen(t, cfg)
	if l.Err() != nil {
		t.Fatalf("Err on a healthy log: %v", l.Err())
	}
	ffs.Inject(vfs.FailOnce(vfs.OpSync, segmentExt, vfs.ErrInjected))
	storeRange(t, l, 1, 10, 5)
	select {
	case <-l.Failed():
	case <-time.After(10 * time.Second):
		t.Fatal("background fsync failure not reported within 10 s")
	}
	expectFailed(t, l)
	if err := l.StoreLogs(makeRange(11, 11)); !errors.Is(err, ErrFailed) {
		t.Fatalf("StoreLogs after a failed background fsync = %v, want ErrFailed", err)
	}
	ffs.Inject(nil)
	_ = l.Close()
	expectUncleanClose(t, ffs)
	// Reopened, the log scans, keeps a prefix and takes writes again.
	l = mustOpen(t, testConfig(ffs, testDir))
	defer closeLog(t, l)
	last, _ := l.LastIndex()
	storeRange(t, l, last+1, last+2, 2)
	checkRange(t, l, 1, last+2)
}

// countEntries opens a copy of the log and returns how many entries it
// recovered.
func countEntries(t *testing.T, fsys *vfs.MemFS) uint64 {
	t.Helper()
	l := mustOpen(t, testConfig(fsys, testDir))
	defer closeLog(t, l)
	last, _ := l.LastIndex()
	first, _ := l.FirstIndex()
	if last == 0 {
		return 0
	}
	return last - first + 1
}

// TestSetDeferSyncAfterOpen: the raft node is built after its log, so it
// turns deferred syncs on with SetDeferSync; a log opened without
// Config.DeferSync then defers like one opened with it, and stops when the
// function is removed.
func TestSetDeferSyncAfterOpen(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	cfg := testConfig(ffs, testDir)
	cfg.SegmentSize = 1 << 20
	l := mustOpen(t, cfg)
	g := newGatedSyncs()
	ffs.Inject(g)
	l.SetDeferSync(func() bool { return true })
	storeRange(t, l, 1, 3, 3)
	<-g.started
	if got := l.DurableIndex(); got != 0 {
		t.Fatalf("DurableIndex during the held deferred sync = %d, want 0", got)
	}
	g.gate <- struct{}{}
	if err := l.WaitDurable(context.Background(), 3); err != nil {
		t.Fatalf("WaitDurable(3): %v", err)
	}
	l.SetDeferSync(nil)
	done := make(chan struct{})
	go func() { storeRange(t, l, 4, 4, 1); close(done) }()
	<-g.started // StoreLogs's own fsync now, not the syncer's
	select {
	case <-done:
		t.Fatal("StoreLogs returned before its own fsync with deferring off")
	default:
	}
	g.gate <- struct{}{}
	<-done
	ffs.Inject(nil)
	if got := l.DurableIndex(); got != 4 {
		t.Fatalf("DurableIndex after a synchronous StoreLogs = %d, want 4", got)
	}
	closeLog(t, l)
}
