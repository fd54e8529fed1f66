package commitlog

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/raft"
)

// StoreLogs implements raft.LogStore. The batch is framed into one buffer
// and written with one write; in SyncFlush the segment is fsynced once
// before StoreLogs returns, unless Config.DeferSync says the caller waits
// for DurableIndex instead: then the background syncer fsyncs it at once,
// while StoreLogs has returned. The entry index is written but synced
// lazily: recovery rebuilds it from the segments.
//
// On a non-empty log the batch must start at LastIndex+1; an empty log
// accepts any first index (raft stores from snapshotIndex+1 after a
// snapshot install). After a failed write or fsync every later write
// returns ErrFailed until the log is reopened: whether the failed batch
// reached the disk is unknown, so it is not acknowledged. Running out of
// space is not such a failure: the batch is refused with an error
// wrapping ErrNoSpace, nothing of it stays in the files, and writes are
// tried again once space returns (see space.go).
//
// The first batch after a suffix truncation (DeleteRange) is different: a
// refusal of it, for lack of space or any other reason, fails the log for
// good (see cutFrom).
func (l *Log) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	err := l.storeLogs(logs)
	if l.cutFrom == 0 {
		return err
	}
	if err != nil {
		return l.failAfterCut(err)
	}
	l.cutFrom = 0
	return nil
}

// storeLogs is StoreLogs; caller holds wmu.
func (l *Log) storeLogs(logs []*raft.Log) error {
	if err := l.writable(); err != nil {
		return err
	}
	if err := l.SpaceRefusal(); err != nil {
		return err
	}
	if err := l.checkContiguous(logs); err != nil {
		return err
	}
	if err := l.prepareSegment(logs); err != nil {
		return err
	}
	act := l.active()
	ents, err := l.encode(logs, act.size)
	if err != nil {
		return err
	}
	if err := l.reserve(act, int64(len(l.buf))); err != nil {
		return err
	}
	if _, err := act.f.WriteAt(l.buf, act.size); err != nil {
		return l.writeFailed(act, fmt.Errorf("commitlog: write segment %d: %w", act.base, err))
	}
	if _, err := act.idx.WriteAt(l.idxBuf, int64(act.count)*entrySize); err != nil {
		return l.writeFailed(act, fmt.Errorf("commitlog: write entry index %d: %w", act.base, err))
	}
	deferred := l.deferSync()
	if l.cfg.FlushMode == SyncFlush && !deferred {
		start := time.Now()
		if err := act.f.Sync(); err != nil {
			return l.fail(fmt.Errorf("commitlog: sync segment %d: %w", act.base, err))
		}
		l.synced(start, len(logs))
	} else if l.cfg.FlushMode == AsyncFlush {
		l.dirty.Store(true)
	}
	l.publish(act, logs, ents)
	if deferred {
		l.requestSync()
	} else {
		// The fsync covered every earlier write to the file too, and
		// earlier segments were synced when sealed.
		l.dur.advance(l.lastIndex)
		l.caughtUp(act)
	}
	if cap(l.buf) > maxRetainedBuffer {
		l.buf, l.idxBuf = nil, nil // one huge batch should not pin its buffer forever
	}
	return nil
}

// maxRetainedBuffer is the largest write buffer kept between batches.
const maxRetainedBuffer = 4 << 20

func (l *Log) checkContiguous(logs []*raft.Log) error {
	next := logs[0].Index
	if l.lastIndex != 0 && next != l.lastIndex+1 {
		return fmt.Errorf("%w: got %d, last index %d", ErrNonContiguous, next, l.lastIndex)
	}
	if next == 0 {
		return fmt.Errorf("%w: index 0", ErrNonContiguous)
	}
	for i, lg := range logs {
		if lg.Index != next+uint64(i) {
			return fmt.Errorf("%w: batch has %d after %d", ErrNonContiguous, lg.Index, next+uint64(i)-1)
		}
	}
	return nil
}

// encode frames logs into l.buf and their index records into l.idxBuf.
// It returns the first and last entry index records.
func (l *Log) encode(logs []*raft.Log, pos int64) ([2]entry, error) {
	var ents [2]entry
	buf, ib := l.buf[:0], l.idxBuf[:0]
	end := l.endCO
	for i, lg := range logs {
		e := l.span(lg, pos+int64(len(buf)), end)
		if e.commitOf < end {
			return ents, fmt.Errorf("%w: index %d at %d, previous end %d", ErrCommitOffset, lg.Index, e.commitOf, end)
		}
		buf = appendRecord(buf, lg)
		ib = appendEntry(ib, e)
		end = e.end()
		if i == 0 {
			ents[0] = e
		}
		ents[1] = e
	}
	l.buf, l.idxBuf = buf, ib
	return ents, nil
}

// span builds the index record of lg stored at pos, end being the commit
// offset end of the entries before it.
func (l *Log) span(lg *raft.Log, pos, end int64) entry {
	e := entry{pos: pos, length: uint32(recordSize(lg)), commitOf: end}
	if l.cfg.Span == nil {
		return e
	}
	co, start, n, ok := l.cfg.Span(lg)
	if !ok || n <= 0 || start < 0 || start+n > len(lg.Data) {
		return e
	}
	e.commitOf, e.msgOff, e.msgLen = co, uint32(dataOffset(lg)+start), uint32(n)
	return e
}

func (l *Log) publish(act *segment, logs []*raft.Log, ents [2]entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if act.count == 0 {
		act.startCO = ents[0].commitOf
	}
	act.count += uint64(len(logs))
	act.size += int64(len(l.buf))
	act.endCO = ents[1].end()
	act.modTime = timeNow()
	l.lastIndex = logs[len(logs)-1].Index
	l.endCO = act.endCO
}

// prepareSegment makes sure the active segment can take the batch,
// starting a new one when the log is empty or the active one is full.
func (l *Log) prepareSegment(logs []*raft.Log) error {
	if l.lastIndex == 0 && len(l.segs) > 0 {
		// Only empty segments left (after recovery of a log that never
		// got an entry in): drop them so the new first index names one.
		if err := l.deleteAll(); err != nil {
			return err
		}
	}
	act := l.active()
	if act != nil {
		n := int64(0)
		for _, lg := range logs {
			n += int64(recordSize(lg))
		}
		if act.count == 0 || act.size+n <= l.cfg.SegmentSize {
			return nil
		}
	}
	if err := l.roll(logs[0].Index); err != nil {
		return l.fail(err) // an ErrNoSpace is a refusal, not sticky
	}
	return nil
}

// roll seals the active segment and starts segment base. The new segment's
// file is made and preallocated first: without space for it the roll is
// refused and the active segment stays active.
func (l *Log) roll(base uint64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	s, err := l.createSegment(base)
	if err != nil {
		return err
	}
	if act := l.active(); act != nil {
		if err := l.syncActive(act); err != nil {
			_ = s.close()
			return err
		}
		l.mu.Lock()
		act.sealed = true
		l.mu.Unlock()
	}
	l.mu.Lock()
	s.startCO, s.endCO, s.modTime = l.endCO, l.endCO, timeNow()
	l.segs = append(l.segs, s)
	l.mu.Unlock()
	return l.writeCheckpoint(l.currentCheckpoint())
}

// createSegment names the preallocated file (or a new one, which it
// preallocates) as segment base.
func (l *Log) createSegment(base uint64) (*segment, error) {
	taken := l.pre.take()
	if taken {
		err := l.fs.Rename(l.path(nextName), segmentName(l.cfg.Dir, base, segmentExt))
		l.pre.named()
		if err != nil {
			return nil, fmt.Errorf("commitlog: name preallocated segment %d: %w", base, err)
		}
	} else {
		l.pre.request()
	}
	s, err := openSegmentFiles(l.fs, l.cfg.Dir, base, true)
	if err != nil {
		if isNoSpace(err) {
			return nil, noSpaceErr(err)
		}
		return nil, err
	}
	if !taken {
		if err := l.preallocateNew(s); err != nil {
			return nil, err
		}
	}
	s.mapLen = l.cfg.SegmentSize
	if err := l.syncDir(); err != nil {
		_ = s.close()
		return nil, err
	}
	return s, nil
}

// currentCheckpoint describes the published state; the caller has made it
// durable. Caller holds wmu or flushMu.
func (l *Log) currentCheckpoint() checkpoint {
	l.mu.RLock()
	defer l.mu.RUnlock()
	act := l.active()
	if act == nil {
		return checkpoint{}
	}
	return checkpoint{segBase: act.base, index: act.base + act.count - 1, pos: act.size, endCO: act.endCO}
}

// writeCheckpoint replaces the checkpoint atomically: temp file, fsync,
// rename, fsync of the directory. Caller holds flushMu. Without space for
// the temp file the error wraps ErrNoSpace: the old checkpoint still
// describes synced state, so nothing is lost but a shorter recovery scan.
func (l *Log) writeCheckpoint(c checkpoint) error {
	tmp := l.path(ckptTempName)
	f, err := l.fs.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return l.checkpointFailed(err)
	}
	if _, err := f.Write(encodeCheckpoint(c)); err != nil {
		_ = f.Close()
		return l.checkpointFailed(err)
	}
	err = errors.Join(f.Sync(), f.Close())
	if err == nil {
		err = l.fs.Rename(tmp, l.path(ckptName))
	}
	if err == nil {
		err = l.fs.SyncDir(l.cfg.Dir)
	}
	if err != nil {
		return fmt.Errorf("commitlog: checkpoint: %w", err)
	}
	return nil
}
