package commitlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/vfs"
	"github.com/raftmq/raftmq/internal/wallclock"
)

var (
	_ raft.LogStore          = (*Log)(nil)
	_ raft.MonotonicLogStore = (*Log)(nil)
)

// Log is the segmented commitlog; it is the raft log of one broker node.
// Its methods are safe for concurrent use. Raft calls StoreLogs and
// DeleteRange from one goroutine and GetLog from many; pulls call
// ReadMessage concurrently with all of them.
//
// Lock order: wmu, then flushMu, then mu.
type Log struct {
	cfg      Config
	fs       vfs.FS
	logger   hclog.Logger
	delHours [24]bool

	// wmu serializes everything that changes the files: StoreLogs,
	// DeleteRange, retention, Close. The writer's buffers belong to it.
	wmu    sync.Mutex
	buf    []byte
	idxBuf []byte
	failed error // sticky: a write or fsync failed
	// cutFrom is the first index a suffix truncation removed, until the
	// batch raft stores next (from that index) is stored; 0 otherwise.
	// hashicorp/raft truncates a follower's conflicting suffix and then
	// stores the leader's entries, but updates its own idea of the last
	// index only when both succeed: if the store fails, raft still
	// believes the removed entries are there and, looking them up, rejects
	// every later AppendEntries until the process restarts (a node whose
	// disk filled so rejected its leader for good in a container chaos
	// run). The log therefore fails for good when that store fails, so
	// that the process restarts and raft reads the log's real end.
	cutFrom uint64
	// failedCh is closed when failed or dur's error is first set.
	failedCh chan struct{}
	failOnce sync.Once

	// flushMu keeps a checkpoint consistent with the files it describes:
	// held while a checkpoint is taken and while segments are truncated,
	// removed or closed.
	flushMu sync.Mutex

	// mu guards the published state that readers see.
	mu        sync.RWMutex
	segs      []*segment // by base; only the last one is unsealed
	lastIndex uint64
	endCO     int64
	closed    bool

	useMmap bool // read segments through mmap instead of pread
	dirty   atomic.Bool
	refuse  atomic.Bool
	space   spaceGuard
	cache   atomic.Pointer[hit]
	recov   recovering // the recovering marker (recovering.go)

	dur durability
	// deferFn and floorFn are Config.DeferSync and Retention.Floor, which
	// the raft node replaces once it exists (SetDeferSync,
	// SetRetentionFloor): the log is opened before it.
	deferFn atomic.Pointer[func() bool]
	floorFn atomic.Pointer[func() uint64]
	pre     *preallocator
	// historyPins counts open History streams: retention waits for them.
	historyPins atomic.Int32
	// holdThrough is the last index of an imported history: raft's reset
	// of the whole log after the install must not delete it.
	holdThrough atomic.Uint64
	stop        chan struct{}
	wg          sync.WaitGroup
}

// Open opens or creates the log in cfg.Dir and recovers it. If the abort
// file shows that the previous run did not close cleanly, the tail after
// the checkpoint is scanned and a torn or corrupt tail is truncated.
func Open(cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hours, _ := parseDeleteWhen(cfg.Retention.DeleteWhen)
	l := &Log{
		cfg: cfg, fs: cfg.FS, logger: cfg.Logger.Named("commitlog"),
		delHours: hours, useMmap: defaultUseMmap, stop: make(chan struct{}), failedCh: make(chan struct{}),
	}
	if err := l.fs.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("commitlog: create %s: %w", cfg.Dir, err)
	}
	if err := l.recover(); err != nil {
		l.closeSegments()
		return nil, err
	}
	if err := l.openAbort(); err != nil {
		l.closeSegments()
		return nil, err
	}
	// Recovery synced what it kept.
	l.dur.init()
	l.dur.index.Store(l.lastIndex)
	if usage, err := cfg.Retention.DiskUsage(cfg.Dir); err == nil {
		l.setRefuse(usage) // a full disk refuses the first write, not the first after a check
	}
	l.start()
	l.logger.Info("opened", "dir", cfg.Dir, "first", l.first(), "last", l.lastIndex,
		"segments", len(l.segs), "flush", cfg.FlushMode)
	return l, nil
}

func (l *Log) path(name string) string { return filepath.Join(l.cfg.Dir, name) }

func (l *Log) createAbort() error {
	f, err := l.fs.OpenFile(l.path(abortName), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err == nil {
		err = errors.Join(f.Sync(), f.Close(), l.fs.SyncDir(l.cfg.Dir))
	}
	if err != nil {
		return fmt.Errorf("commitlog: create abort file: %w", err)
	}
	return nil
}

// start launches the background goroutines Close stops.
func (l *Log) start() {
	l.pre = newPreallocator(l.fs, l.path(nextName), l.cfg.SegmentSize, l.logger)
	l.pre.start(&l.wg, l.stop)
	l.startSpaceCheck()
	if l.cfg.DeferSync != nil {
		l.deferFn.Store(&l.cfg.DeferSync)
	}
	if l.cfg.Retention.Floor != nil {
		l.floorFn.Store(&l.cfg.Retention.Floor)
	}
	if l.cfg.FlushMode == AsyncFlush {
		l.wg.Add(1)
		go l.flushLoop()
	} else {
		// Started whether or not DeferSync is set yet: SetDeferSync may
		// come later. It sleeps until a deferred batch kicks it.
		l.wg.Add(1)
		go l.syncLoop()
	}
	if l.cfg.Retention.CheckInterval > 0 {
		l.wg.Add(1)
		go l.retentionLoop()
	}
}

// Close flushes the log, writes a final checkpoint and removes the abort
// file. After a failed write it leaves the abort file, so the next Open
// recovers from the files.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	l.wg.Wait()

	l.wmu.Lock()
	defer l.wmu.Unlock()
	var err error
	// After any failed write or fsync a clean close would checkpoint and
	// drop the abort file over bytes whose fate is unknown (a second fsync
	// may falsely succeed): the next Open must scan as after a crash.
	if l.failed == nil && l.dur.failed() == nil {
		err = l.closeClean()
	}
	return errors.Join(err, l.closeSegments())
}

func (l *Log) closeClean() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if act := l.active(); act != nil {
		if err := l.syncActive(act); err != nil {
			return err
		}
	}
	if err := l.writeCheckpoint(l.currentCheckpoint()); err != nil {
		return err
	}
	if err := l.fs.Remove(l.path(abortName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("commitlog: remove abort file: %w", err)
	}
	return l.syncDir()
}

// syncActive trims the preallocated tail and syncs segment and index.
func (l *Log) syncActive(act *segment) error {
	if err := act.f.Truncate(act.size); err != nil {
		return fmt.Errorf("commitlog: trim segment %d: %w", act.base, err)
	}
	if err := act.f.Sync(); err != nil {
		return fmt.Errorf("commitlog: sync segment %d: %w", act.base, err)
	}
	if err := act.idx.Sync(); err != nil {
		return fmt.Errorf("commitlog: sync entry index %d: %w", act.base, err)
	}
	return nil
}

func (l *Log) closeSegments() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, s.close())
	}
	l.segs = nil
	return errors.Join(errs...)
}

func (l *Log) syncDir() error {
	if err := l.fs.SyncDir(l.cfg.Dir); err != nil {
		return fmt.Errorf("commitlog: sync dir: %w", err)
	}
	return nil
}

// active is the segment being appended to, or nil on an empty log.
func (l *Log) active() *segment {
	if len(l.segs) == 0 {
		return nil
	}
	return l.segs[len(l.segs)-1]
}

// first is the first stored index, 0 when empty; caller holds mu or wmu.
func (l *Log) first() uint64 {
	if l.lastIndex == 0 || len(l.segs) == 0 {
		return 0
	}
	return l.segs[0].base
}

// segFor returns the segment holding index, or nil; caller holds mu.
func (l *Log) segFor(index uint64) *segment {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > index }) - 1
	if i < 0 || l.segs[i].count == 0 || index > l.segs[i].last() {
		return nil
	}
	return l.segs[i]
}

// IsMonotonic implements raft.MonotonicLogStore: the log cannot hold gaps,
// so raft deletes the whole log after restoring a snapshot.
func (l *Log) IsMonotonic() bool { return true }

// FirstIndex implements raft.LogStore. It follows what is on disk:
// retention, not raft compaction, moves it.
func (l *Log) FirstIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, ErrClosed
	}
	return l.first(), nil
}

// LastIndex implements raft.LogStore.
func (l *Log) LastIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, ErrClosed
	}
	return l.lastIndex, nil
}

// GetLog implements raft.LogStore. A missing index returns
// raft.ErrLogNotFound; a record failing its CRC returns an error wrapping
// ErrCorrupt and is never decoded. out's slices are fresh memory the
// caller owns.
func (l *Log) GetLog(index uint64, out *raft.Log) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	s := l.segFor(index)
	if s == nil {
		return raft.ErrLogNotFound
	}
	e, err := s.readEntry(index)
	if err != nil {
		return err
	}
	rec := make([]byte, e.length)
	if err := s.readAt(rec, e.pos, l.useMmap); err != nil {
		return err
	}
	if err := checkRecord(rec); err != nil {
		return fmt.Errorf("commitlog: index %d in segment %d at %d: %w", index, s.base, e.pos, err)
	}
	if got := recordIndex(rec); got != index {
		return fmt.Errorf("commitlog: index %d: record holds index %d: %w", index, got, ErrCorrupt)
	}
	decodeRecord(rec, out)
	return nil
}

// StoreLog implements raft.LogStore.
func (l *Log) StoreLog(lg *raft.Log) error { return l.StoreLogs([]*raft.Log{lg}) }

// writable reports why the log cannot change; caller holds wmu.
func (l *Log) writable() error {
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	switch {
	case closed:
		return ErrClosed
	case l.failed != nil:
		return fmt.Errorf("%w: %w", ErrFailed, l.failed)
	case l.dur.failed() != nil:
		return fmt.Errorf("%w: %w", ErrFailed, l.dur.failed())
	}
	return nil
}

// fail makes err sticky: after a failed write or fsync the bytes on disk
// are unknown, and only a reopen (which scans and truncates) is safe. An
// err wrapping ErrNoSpace is a refusal instead: its caller left the files
// as they were published.
func (l *Log) fail(err error) error {
	if errors.Is(err, ErrNoSpace) {
		return l.refuseNoSpace(err)
	}
	l.failed = err
	l.logger.Error("write failed; log refuses writes until reopened", "error", err)
	l.signalFailed()
	return err
}

// failAfterCut fails the log for good when the store that follows a suffix
// truncation failed, whatever the cause, even a refusal for lack of space
// (see cutFrom). Caller holds wmu.
func (l *Log) failAfterCut(err error) error {
	if l.failed != nil {
		return err
	}
	l.failed = fmt.Errorf("commitlog: raft's view of the log still holds the entries truncated from %d, which could not be replaced: %w", l.cutFrom, err)
	l.logger.Error("entries after a suffix truncation could not be stored; the log refuses writes until reopened, so that raft re-reads its end", "from", l.cutFrom, "error", err)
	l.signalFailed()
	return l.failed
}

// signalFailed closes the Failed channel, once.
func (l *Log) signalFailed() { l.failOnce.Do(func() { close(l.failedCh) }) }

// Failed is closed once a write or fsync failed: the log refuses writes
// until it is reopened, so the process should restart (Err says why).
func (l *Log) Failed() <-chan struct{} { return l.failedCh }

// DiskFull reports whether StoreLogs refuses writes for lack of space: the
// last disk-usage check (at open, then every Retention.CheckInterval) found
// the disk above Retention.DiskRefuseRatio, or the last free-space check
// found less than Retention.MinFreeBytes, or a write met ENOSPC since.
// Unlike Failed it passes: the next check that finds space takes writes
// again.
func (l *Log) DiskFull() bool { return l.refuse.Load() || l.space.full.Load() }

// Err returns the sticky failure of a write or fsync, nil while the log
// is healthy.
func (l *Log) Err() error {
	select {
	case <-l.failedCh:
	default:
		return nil
	}
	if err := l.dur.failed(); err != nil {
		return err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.failed
}

// timeNow is the clock of segment modification times.
var timeNow = wallclock.Now
