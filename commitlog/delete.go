package commitlog

import (
	"errors"
	"fmt"

	"github.com/raftmq/raftmq/internal/vfs"
)

// DeleteRange implements raft.LogStore for the two ways raft calls it:
//
//   - max >= LastIndex: a conflicting suffix (or, with min <= FirstIndex,
//     the whole log after a snapshot install) is truncated at once.
//     An imported history (ImportHistory) is kept: raft's reset right
//     after the install that brought it asks to delete exactly it.
//   - min <= FirstIndex, max < LastIndex: raft compacting after a snapshot.
//     It is a no-op; message retention decides when segments go, and
//     FirstIndex keeps reporting what is on disk.
//
// min > max is a no-op and a range inside the log is ErrMiddleRange.
//
// Raft cannot tell the two apart when compaction reaches LastIndex, which
// happens only with raft.Config.TrailingLogs == 0: dledger must keep
// TrailingLogs above zero.
func (l *Log) DeleteRange(min, max uint64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	first, last := l.first(), l.lastIndex
	switch {
	case last == 0 || min > max:
		return nil
	case max >= last && min <= first:
		if max <= l.holdThrough.Load() {
			return nil // raft's reset after installing a snapshot whose history was imported
		}
		return l.failIf(l.deleteAll())
	case max >= last:
		if min > last {
			return nil
		}
		return l.truncateSuffix(min)
	case min <= first:
		return nil
	default:
		return fmt.Errorf("%w: [%d, %d] of [%d, %d]", ErrMiddleRange, min, max, first, last)
	}
}

// DiscardIfBehind deletes the whole log when it ends below index, the last
// index of a snapshot the node restored: every entry it holds is then
// covered by the snapshot, and the entries after the snapshot must follow
// it (StoreLogs takes only contiguous indexes). raft resets the log itself
// after installing a snapshot, but only logs a failure of that reset and
// goes on, and a crash between the install and the reset leaves the same
// log behind: every later append would then be refused, forever. The
// snapshot's restore calls this first, also on every restart. It reports
// whether it deleted anything.
func (l *Log) DiscardIfBehind(index uint64) (bool, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.writable(); err != nil {
		return false, err
	}
	if l.lastIndex == 0 || l.lastIndex >= index {
		return false, nil
	}
	l.logger.Warn("log ends before the restored snapshot; deleting it so the entries after the snapshot can follow",
		"first", l.first(), "last", l.lastIndex, "snapshot_index", index)
	return true, l.failIf(l.deleteAll())
}

// failIf makes a non-nil err sticky.
func (l *Log) failIf(err error) error {
	if err != nil {
		return l.fail(err)
	}
	return nil
}

// deleteAll removes every segment, newest first, so that a crash half way
// leaves a prefix of the old log rather than a log with a hole.
func (l *Log) deleteAll() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	segs := l.segs
	l.segs, l.lastIndex, l.endCO = nil, 0, 0
	l.holdThrough.Store(0)
	l.dur.truncate(0)
	l.cache.Store(nil)
	var errs []error
	for _, s := range segs {
		errs = append(errs, s.close())
	}
	l.mu.Unlock()
	for i := len(segs) - 1; i >= 0; i-- {
		errs = append(errs, removeFiles(l.fs, l.cfg.Dir, segs[i].base))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("commitlog: delete all: %w", err)
	}
	if err := l.syncDir(); err != nil {
		return err
	}
	l.logger.Info("deleted whole log", "segments", len(segs))
	return l.writeCheckpoint(checkpoint{})
}

// truncateSuffix is raft's suffix truncation of a follower's conflicting
// entries, followed at once by a store of the leader's entries from min.
// While writes are refused for lack of space nothing is truncated: the
// store would be refused, and raft would be left believing in entries the
// log no longer holds (see cutFrom). Once anything is cut, a failure of
// the truncation fails the log for good, as the failed store would.
// Caller holds wmu.
func (l *Log) truncateSuffix(min uint64) error {
	if err := l.SpaceRefusal(); err != nil {
		return fmt.Errorf("commitlog: suffix from %d not truncated: %w", min, err)
	}
	l.cutFrom = min
	if err := l.truncateFrom(min); err != nil {
		return l.failAfterCut(err)
	}
	return nil
}

// truncateFrom removes the entries from min to the end; min lies inside
// the log and above its first index.
func (l *Log) truncateFrom(min uint64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	s := l.segFor(min)
	e, err := s.readEntry(min)
	if err != nil {
		return err
	}
	prev, err := l.entryAt(min - 1)
	if err != nil {
		return err
	}
	k := len(l.segs) - 1
	for l.segs[k] != s {
		k--
	}
	l.mu.Lock()
	removed := l.segs[k+1:]
	l.segs = l.segs[:k+1]
	var errs []error
	for _, r := range removed {
		errs = append(errs, r.close())
	}
	errs = append(errs, s.unmap())
	s.forgetVerified()
	s.sealed = false
	s.count, s.size, s.endCO = min-s.base, e.pos, prev.end()
	if s.count == 0 {
		s.startCO = s.endCO
	}
	l.lastIndex, l.endCO = min-1, prev.end()
	l.dur.truncate(min - 1)
	l.cache.Store(nil)
	l.mu.Unlock()

	errs = append(errs, s.f.Truncate(e.pos), s.idx.Truncate(int64(s.count)*entrySize), s.f.Sync(), s.idx.Sync())
	for _, r := range removed {
		errs = append(errs, removeFiles(l.fs, l.cfg.Dir, r.base))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("commitlog: truncate from %d: %w", min, err)
	}
	if err := l.syncDir(); err != nil {
		return err
	}
	l.reallocate(s)
	l.logger.Info("truncated suffix", "from", min, "segments_removed", len(removed))
	return l.writeCheckpoint(l.currentCheckpoint())
}

// entryAt reads the index record of a stored index; caller holds wmu or mu.
func (l *Log) entryAt(index uint64) (entry, error) {
	s := l.segFor(index)
	if s == nil {
		return entry{}, fmt.Errorf("commitlog: index %d not stored", index)
	}
	return s.readEntry(index)
}

// reallocate gives the active segment s back the space its truncation
// released, so that the store raft makes right after the truncation does
// not have to allocate it again on a nearly full disk. A failure is only
// logged: that store preallocates anyway (reserve) and refuses cleanly.
func (l *Log) reallocate(s *segment) {
	pa, ok := s.f.(vfs.Preallocator)
	if !ok {
		return
	}
	if err := pa.Preallocate(l.cfg.SegmentSize); err != nil {
		l.logger.Warn("could not preallocate the truncated segment again", "segment", s.base, "error", err)
	}
}
