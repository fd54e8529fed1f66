package commitlog

// Running out of space is a refusal, not a failure. A write, fallocate or
// ftruncate on the data path that fails with ENOSPC or EDQUOT changed
// nothing the log cannot undo: the segment and its entry index are cut back
// to their published size, so neither recovery nor a later write sees any
// of the refused batch, and StoreLogs returns an error wrapping ErrNoSpace.
// The log is not marked failed; the refusal holds until the next free-space
// check (every spaceCheckEvery) and then writes are tried again.
//
// A failed fsync stays sticky whatever its errno (see flushOnce): after
// one the kernel may have dropped the dirty pages. On file systems with
// delayed allocation (ext4) an ENOSPC can surface only at fsync; that
// stays fatal, and RetentionConfig.MinFreeBytes, which refuses writes
// before the file system is really full, is the guard against it.
// Segments are preallocated (fallocate) before a byte is written into
// them, so a write into a segment does not allocate.

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/raftmq/raftmq/internal/vfs"
)

// spaceCheckEvery is the period of the background free-space check; a
// write batch reads its cached result, never statfs itself.
const spaceCheckEvery = 200 * time.Millisecond

// spaceGuard is the log's view of free space. Its zero value accepts
// writes.
type spaceGuard struct {
	// full is set by a check below MinFreeBytes or by a write that met
	// ENOSPC, and cleared by the next check that finds MinFreeBytes free.
	full atomic.Bool
	// free is the last check's free bytes, -1 before the first one.
	free atomic.Int64
	// noAbort: Open could not create the abort file for lack of space;
	// writes are refused until a check creates it.
	noAbort atomic.Bool
}

// isNoSpace reports whether err is the file system running out of space
// or quota.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// noSpaceErr wraps a no-space cause as a refusal.
func noSpaceErr(cause error) error {
	return fmt.Errorf("%w: %w", ErrNoSpace, cause)
}

// freeBytesFunc is Retention.FreeBytes or its default, statfs.
func (l *Log) freeBytesFunc() func(string) (int64, error) {
	if f := l.cfg.Retention.FreeBytes; f != nil {
		return f
	}
	return statfsFree
}

// startSpaceCheck checks free space once, so a full disk refuses the first
// write, and starts the background check Close stops.
func (l *Log) startSpaceCheck() {
	l.space.free.Store(-1)
	l.checkSpace()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(spaceCheckEvery)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.checkSpace()
			}
		}
	}()
}

// checkSpace refreshes the free-space view. A file system that cannot
// say (statfs fails, as for an in-memory FS) never refuses.
func (l *Log) checkSpace() {
	defer l.recheckUsage()
	if l.space.noAbort.Load() {
		if err := l.createAbort(); err != nil {
			l.setSpaceFull(true, "abort file still cannot be created", err)
			return
		}
		l.space.noAbort.Store(false)
	}
	free, err := l.freeBytesFunc()(l.cfg.Dir)
	if err != nil {
		l.space.free.Store(-1)
		l.setSpaceFull(false, "free space unknown", err)
		return
	}
	l.space.free.Store(free)
	l.setSpaceFull(free < l.cfg.Retention.MinFreeBytes, "free space checked", nil)
}

// recheckUsage looks at the usage ratio again while it refuses writes, so
// a disk freed by hand takes writes within a space check, not at the next
// retention run (every RetentionConfig.CheckInterval, 10 s by default).
func (l *Log) recheckUsage() {
	if !l.refuse.Load() || l.cfg.Retention.DiskUsage == nil {
		return
	}
	if usage, err := l.cfg.Retention.DiskUsage(l.cfg.Dir); err == nil {
		l.setRefuse(usage)
	}
}

func (l *Log) setSpaceFull(full bool, why string, err error) {
	if l.space.full.Swap(full) == full {
		return
	}
	args := []any{"free_bytes", l.space.free.Load(), "min_free_bytes", l.cfg.Retention.MinFreeBytes, "refusing_writes", full}
	if err != nil {
		args = append(args, "error", err)
	}
	l.logger.Warn("disk space: "+why, args...)
}

// SpaceRefusal says why StoreLogs refuses writes for lack of space, an
// error wrapping ErrDiskFull (usage ratio) or ErrNoSpace (MinFreeBytes, a
// write that met ENOSPC, no abort file), or nil while it takes them. It
// reads the last checks' results and never touches the disk.
func (l *Log) SpaceRefusal() error {
	switch {
	case l.refuse.Load():
		return ErrDiskFull
	case l.space.noAbort.Load():
		return fmt.Errorf("%w: the abort file could not be created", ErrNoSpace)
	case l.space.full.Load():
		return fmt.Errorf("%w: %d bytes free, MinFreeBytes %d", ErrNoSpace, l.space.free.Load(), l.cfg.Retention.MinFreeBytes)
	}
	return nil
}

// refuseNoSpace records a write that met ENOSPC: writes are refused until
// the next check finds space.
func (l *Log) refuseNoSpace(err error) error {
	if !l.space.full.Swap(true) {
		l.logger.Warn("disk space: no space left; writes refused until space returns", "error", err)
	}
	return err
}

// openAbort creates the abort file; without space it opens the log
// refusing writes until a check creates it. Caller is Open.
func (l *Log) openAbort() error {
	err := l.createAbort()
	if err != nil && isNoSpace(err) {
		l.space.noAbort.Store(true)
		l.space.full.Store(true)
		l.logger.Warn("disk space: cannot create the abort file; writes refused until space returns", "error", err)
		return nil
	}
	return err
}

// reserve makes sure the active segment's file is allocated up to
// act.size+n before anything is written there: a segment's file is
// fallocated to SegmentSize (or the batch's end, if larger), so a write into
// it does not allocate. On ENOSPC the file is cut back to its published size
// and the batch refused. Caller holds wmu.
func (l *Log) reserve(act *segment, n int64) error {
	fi, err := act.f.Stat()
	if err != nil {
		return l.fail(fmt.Errorf("commitlog: stat segment %d: %w", act.base, err))
	}
	want := act.size + n
	if fi.Size() >= want {
		return nil
	}
	pa, ok := act.f.(vfs.Preallocator)
	if !ok {
		return nil // an in-memory FS cannot run out of space
	}
	err = pa.Preallocate(max(l.cfg.SegmentSize, want))
	if err == nil {
		return nil
	}
	return l.writeFailed(act, fmt.Errorf("commitlog: preallocate segment %d: %w", act.base, err))
}

// writeFailed handles a failed write to the active segment or its index:
// ENOSPC cuts both back and refuses the batch, anything else is sticky.
// Caller holds wmu.
func (l *Log) writeFailed(act *segment, err error) error {
	if !isNoSpace(err) {
		return l.fail(err)
	}
	if cerr := l.cutBack(act); cerr != nil {
		return l.fail(errors.Join(err, cerr))
	}
	return l.refuseNoSpace(noSpaceErr(err))
}

// cutBack truncates the active segment and its index to what is published,
// so a refused batch leaves no bytes behind: not even a complete record
// whose index write failed, which recovery would otherwise find.
func (l *Log) cutBack(act *segment) error {
	if err := act.f.Truncate(act.size); err != nil {
		return fmt.Errorf("commitlog: cut segment %d back to %d: %w", act.base, act.size, err)
	}
	if err := act.idx.Truncate(int64(act.count) * entrySize); err != nil {
		return fmt.Errorf("commitlog: cut entry index %d back: %w", act.base, err)
	}
	return nil
}

// preallocateNew reserves SegmentSize bytes for a segment file made without
// the preallocator's help; on ENOSPC it removes the file and the refusal
// wraps ErrNoSpace. Caller holds flushMu.
func (l *Log) preallocateNew(s *segment) error {
	pa, ok := s.f.(vfs.Preallocator)
	if !ok {
		return nil
	}
	err := pa.Preallocate(l.cfg.SegmentSize)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("commitlog: preallocate segment %d: %w", s.base, err)
	if !isNoSpace(err) {
		return err
	}
	if rerr := errors.Join(s.close(), removeFiles(l.fs, l.cfg.Dir, s.base)); rerr != nil {
		return errors.Join(err, rerr) // not a clean refusal: the file may be left
	}
	return noSpaceErr(err)
}

// checkpointFailed classifies a failed write of the checkpoint's temp file:
// the temp file is removed (it holds nothing yet) and ENOSPC is a refusal.
func (l *Log) checkpointFailed(err error) error {
	if rerr := l.fs.Remove(l.path(ckptTempName)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		l.logger.Warn("remove checkpoint temp file", "error", rerr)
	}
	err = fmt.Errorf("commitlog: checkpoint: %w", err)
	if isNoSpace(err) {
		return noSpaceErr(err)
	}
	return err
}

// DiskUsage is the used fraction of the file system holding the log, by
// Retention.DiskUsage (statfs unless configured). It touches the disk
// (one statfs); the write path never calls it.
func (l *Log) DiskUsage() (float64, error) { return l.cfg.Retention.DiskUsage(l.cfg.Dir) }

// FreeBytes is the last free-space check's free bytes of the file system
// holding the log (refreshed every 200 ms), -1 while unknown.
func (l *Log) FreeBytes() int64 { return l.space.free.Load() }
