package consumequeue

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/internal/vfs"
)

// Queue is the consumequeue of one topic and queue id.
type Queue struct {
	topic string
	id    int32
	dir   string
	fs    vfs.FS
	per   int64
	log   hclog.Logger

	mu       sync.RWMutex
	segs     []*segment // contiguous, ascending start
	min, max int64
	last     Entry // entry at max-1 when hasLast
	hasLast  bool
	dirMade  bool
	// dirsDirty: a file was created since the last flush, whose directory
	// entries (and the queue's and topic's directories) flush syncs.
	dirsDirty atomic.Bool
	closed    bool
	wbuf      []byte // write buffer; mu held
}

// Topic returns the queue's topic.
func (q *Queue) Topic() string { return q.topic }

// ID returns the queue id.
func (q *Queue) ID() int32 { return q.id }

// MinOffset returns the first readable queue offset.
func (q *Queue) MinOffset() int64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.min
}

// MaxOffset returns the next queue offset to be written; the queue holds
// [MinOffset, MaxOffset).
func (q *Queue) MaxOffset() int64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.max
}

// LastCommitOffset returns the commit offset of the entry at MaxOffset-1,
// or -1 if there is none on disk.
func (q *Queue) LastCommitOffset() int64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if !q.hasLast {
		return -1
	}
	return q.last.CommitOffset
}

// Append stores e at queueOffset. It is idempotent because raft replays
// entries already applied before a restart:
//
//   - queueOffset == MaxOffset: e is appended;
//   - queueOffset < MaxOffset and the stored entry equals e: nil, nothing
//     is written; below MinOffset the entry is gone and nil is returned;
//   - queueOffset < MaxOffset and the stored entry differs: the stored
//     one is stale or torn (the log being replayed is the truth), so the
//     queue is truncated at queueOffset (durably, with a warning) and e
//     appended;
//   - queueOffset > MaxOffset: ErrGap (use SetMinOffset on an empty queue
//     to start elsewhere).
//
// e.CommitOffset must exceed the previous entry's (ErrOutOfOrder), because
// recovery and the commit-offset searches rely on it. The write reaches the
// page cache; Store.Flush makes it durable.
func (q *Queue) Append(queueOffset int64, e Entry) error {
	one := [1]Entry{e}
	return q.AppendBatch(queueOffset, one[:])
}

// AppendBatch stores es at the consecutive queue offsets from first, with
// Append's rules applied to each entry in turn, and writes the new entries
// with one write per file rather than one per entry. On an error the
// entries before the failing one may have been stored.
func (q *Queue) AppendBatch(first int64, es []Entry) error {
	for i := range es {
		if !es[i].valid() {
			return fmt.Errorf("%w: %+v", ErrInvalidEntry, es[i])
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	n, err := q.replayed(first, es)
	if errors.Is(err, ErrMismatch) {
		// The log is the truth and this queue only its cache: an entry
		// that disagrees with the replayed log was torn or left stale by
		// a power loss (entries are synced only before snapshots, and
		// 20-byte entries straddle pages). Rewrite the queue from there.
		q.log.Warn("consumequeue entry disagrees with the commitlog; rewriting the queue from it", "error", err)
		err = q.truncateAt(first + int64(n))
	}
	if err != nil || n == len(es) {
		return err
	}
	if off := first + int64(n); off > q.max {
		return fmt.Errorf("%w: %s/%d offset %d, max %d", ErrGap, q.topic, q.id, off, q.max)
	}
	last, has := q.last, q.hasLast
	for i := n; i < len(es); i++ {
		if has && es[i].CommitOffset <= last.CommitOffset {
			return fmt.Errorf("%w: %s/%d offset %d: commit offset %d after %d",
				ErrOutOfOrder, q.topic, q.id, first+int64(i), es[i].CommitOffset, last.CommitOffset)
		}
		last, has = es[i], true
	}
	return q.write(es[n:])
}

// replayed checks the leading entries of es that the queue already holds
// (a replay) and returns how many there are.
func (q *Queue) replayed(first int64, es []Entry) (int, error) {
	n := 0
	for ; n < len(es) && first+int64(n) < q.max; n++ {
		off := first + int64(n)
		if off < q.min {
			continue
		}
		got, err := q.readEntry(off)
		if err != nil {
			return n, err
		}
		if got != es[n] {
			return n, fmt.Errorf("%w: %s/%d offset %d: stored %+v, appending %+v",
				ErrMismatch, q.topic, q.id, off, got, es[n])
		}
	}
	return n, nil
}

// write appends es at max, one WriteAt per file touched.
func (q *Queue) write(es []Entry) error {
	for len(es) > 0 {
		s, err := q.segmentForWrite(q.max)
		if err != nil {
			return err
		}
		k := min(int64(len(es)), s.start+q.per-q.max)
		q.wbuf = q.wbuf[:0]
		for i := int64(0); i < k; i++ {
			q.wbuf = es[i].appendTo(q.wbuf)
		}
		if _, err := s.f.WriteAt(q.wbuf, (q.max-s.start)*EntrySize); err != nil {
			return fmt.Errorf("consumequeue: write %s: %w", s.f.Name(), err)
		}
		s.dirty.Store(true)
		q.max += k
		q.last, q.hasLast = es[k-1], true
		es = es[k:]
	}
	if cap(q.wbuf) > maxRetainedWrite {
		q.wbuf = nil
	}
	return nil
}

// maxRetainedWrite bounds the write buffer a queue keeps between appends.
const maxRetainedWrite = 64 << 10

// SetMinOffset makes an empty queue start at off: the queue's files are
// removed and the next Append must be at off. It is meant for a queue that
// is new after a snapshot restore or a rebuild from a commitlog whose head
// was deleted. The start becomes durable with the first flushed Append.
func (q *Queue) SetMinOffset(off int64) error {
	if off < 0 {
		return fmt.Errorf("%w: negative offset %d", ErrOffsetOutOfRange, off)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	if q.min != q.max {
		return fmt.Errorf("%w: %s/%d holds [%d,%d)", ErrNotEmpty, q.topic, q.id, q.min, q.max)
	}
	segs := q.segs
	q.segs = nil
	q.min, q.max, q.hasLast = off, off, false
	return q.removeSegments(segs)
}

// Get returns the entry at off, ErrOffsetOutOfRange outside
// [MinOffset, MaxOffset).
func (q *Queue) Get(off int64) (Entry, error) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return Entry{}, ErrClosed
	}
	if off < q.min || off >= q.max {
		return Entry{}, fmt.Errorf("%w: %s/%d offset %d not in [%d,%d)", ErrOffsetOutOfRange, q.topic, q.id, off, q.min, q.max)
	}
	return q.readEntry(off)
}

// Read appends to dst up to max entries starting at off and returns the
// extended slice; reading at MaxOffset returns dst unchanged (nothing new
// yet), elsewhere outside [MinOffset, MaxOffset] it is ErrOffsetOutOfRange.
// Reusing dst makes a read allocation-free.
func (q *Queue) Read(off int64, max int, dst []Entry) ([]Entry, error) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return dst, ErrClosed
	}
	if off < q.min || off > q.max {
		return dst, fmt.Errorf("%w: %s/%d offset %d not in [%d,%d]", ErrOffsetOutOfRange, q.topic, q.id, off, q.min, q.max)
	}
	n := min(int64(max), q.max-off)
	buf := chunkPool.Get().(*[chunkEntries * EntrySize]byte)
	defer chunkPool.Put(buf)
	for n > 0 {
		s := q.segmentAt(off)
		k := min(n, chunkEntries, s.start+q.per-off)
		b := buf[:k*EntrySize]
		if err := readFull(s.f, b, (off-s.start)*EntrySize); err != nil {
			return dst, err
		}
		for i := int64(0); i < k; i++ {
			dst = append(dst, decode(b[i*EntrySize:]))
		}
		off += k
		n -= k
	}
	return dst, nil
}

// SearchByTimestamp returns the first queue offset in [MinOffset,
// MaxOffset) whose message was stored at or after ts, or MaxOffset when
// all are older (RocketMQ's getOffsetInQueueByTime). storeTime reads a
// message's store timestamp from the commitlog; store times are assumed
// non-decreasing along the queue. No lock is held while it runs.
func (q *Queue) SearchByTimestamp(ts int64, storeTime func(Entry) (int64, error)) (int64, error) {
	q.mu.RLock()
	lo, hi := q.min, q.max
	q.mu.RUnlock()
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, err := q.Get(mid)
		if err != nil {
			return 0, err
		}
		t, err := storeTime(e)
		if err != nil {
			return 0, fmt.Errorf("consumequeue: store time of %s/%d offset %d: %w", q.topic, q.id, mid, err)
		}
		if t >= ts {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// searchCommitOffset returns the first offset in [min,max) whose commit
// offset is >= co, or max. Commit offsets increase along the queue.
func (q *Queue) searchCommitOffset(co int64) (int64, error) {
	lo, hi := q.min, q.max
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, err := q.readEntry(mid)
		if err != nil {
			return 0, err
		}
		if e.CommitOffset >= co {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// truncateCommitOffset drops the entries whose commit offset is >= co and
// makes that durable at once: a resurrected stale entry would contradict
// the replayed log.
func (q *Queue) truncateCommitOffset(co int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	newMax, err := q.searchCommitOffset(co)
	if err != nil || newMax == q.max {
		return err
	}
	return q.truncateAt(newMax)
}

// truncateAt drops the entries from queue offset newMax (min <= newMax <
// max) and makes that durable at once. q.mu is held.
func (q *Queue) truncateAt(newMax int64) error {
	keep := len(q.segs)
	if s := q.segmentAt(newMax); s != nil {
		keep = int((s.start-q.segs[0].start)/q.per) + 1
		if err := q.zeroFrom(s, newMax); err != nil {
			return err
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("consumequeue: sync %s: %w", s.f.Name(), err)
		}
		s.dirty.Store(false)
	}
	drop := q.segs[keep:]
	q.segs = q.segs[:keep]
	q.log.Info("truncated", "topic", q.topic, "queue", q.id, "from", q.max, "to", newMax)
	q.max = newMax
	if err := q.loadLast(); err != nil {
		return err
	}
	return q.removeSegmentsReverse(drop)
}

func (q *Queue) removeSegmentsReverse(segs []*segment) error {
	for i := len(segs) - 1; i >= 0; i-- {
		if err := q.removeSegments(segs[i : i+1]); err != nil {
			return err
		}
	}
	return nil
}

// correctMinOffset moves min past the entries whose commit offset is below
// minCO and deletes the files entirely below the new min, keeping the last
// file so the queue's position survives a restart.
func (q *Queue) correctMinOffset(minCO int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	newMin, err := q.searchCommitOffset(minCO)
	if err != nil || newMin <= q.min {
		return err
	}
	q.min = newMin
	n := 0
	for n < len(q.segs)-1 && q.segs[n].start+q.per <= newMin {
		n++
	}
	drop := q.segs[:n]
	q.segs = q.segs[n:]
	if n > 0 {
		q.log.Debug("deleted files below min", "topic", q.topic, "queue", q.id, "files", n, "min", newMin)
	}
	return q.removeSegments(drop)
}

// loadLast refreshes last from the entry at max-1, if one is on disk.
func (q *Queue) loadLast() error {
	q.hasLast = false
	if q.segmentAt(q.max-1) == nil {
		return nil
	}
	e, err := q.readEntry(q.max - 1)
	if err != nil {
		return err
	}
	q.last, q.hasLast = e, e.valid()
	return nil
}

// segmentAt returns the segment holding off, or nil.
func (q *Queue) segmentAt(off int64) *segment {
	if len(q.segs) == 0 || off < q.segs[0].start {
		return nil
	}
	i := (off - q.segs[0].start) / q.per
	if i >= int64(len(q.segs)) {
		return nil
	}
	return q.segs[i]
}

func (q *Queue) segmentForWrite(off int64) (*segment, error) {
	if s := q.segmentAt(off); s != nil {
		return s, nil
	}
	s, err := q.createSegment(off - off%q.per)
	if err != nil {
		return nil, err
	}
	q.segs = append(q.segs, s)
	return s, nil
}

func (q *Queue) readEntry(off int64) (Entry, error) {
	s := q.segmentAt(off)
	if s == nil {
		return Entry{}, fmt.Errorf("%w: %s/%d offset %d has no file", ErrOffsetOutOfRange, q.topic, q.id, off)
	}
	buf := chunkPool.Get().(*[chunkEntries * EntrySize]byte)
	defer chunkPool.Put(buf)
	if err := readFull(s.f, buf[:EntrySize], (off-s.start)*EntrySize); err != nil {
		return Entry{}, err
	}
	return decode(buf[:EntrySize]), nil
}

// readFull reads len(b) bytes at pos; a short file reads as zeros, which
// is what a sparse or torn file holds there.
func readFull(f vfs.File, b []byte, pos int64) error {
	n, err := f.ReadAt(b, pos)
	if err == io.EOF {
		clear(b[n:])
		return nil
	}
	if err != nil {
		return fmt.Errorf("consumequeue: read %s: %w", f.Name(), err)
	}
	return nil
}

// flush syncs the directories of new files and the dirty files. Reads go
// on meanwhile; appends wait.
func (q *Queue) flush() error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return nil
	}
	if q.dirsDirty.Swap(false) {
		for _, d := range []string{filepath.Dir(filepath.Dir(q.dir)), filepath.Dir(q.dir), q.dir} {
			if err := q.fs.SyncDir(d); err != nil {
				q.dirsDirty.Store(true)
				return fmt.Errorf("consumequeue: sync dir %s: %w", d, err)
			}
		}
	}
	for _, s := range q.segs {
		if !s.dirty.Swap(false) {
			continue
		}
		if err := s.f.Sync(); err != nil {
			s.dirty.Store(true)
			return fmt.Errorf("consumequeue: sync %s: %w", s.f.Name(), err)
		}
	}
	return nil
}

// close closes the files without syncing them.
func (q *Queue) close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	var first error
	for _, s := range q.segs {
		if err := s.f.Close(); err != nil && first == nil {
			first = fmt.Errorf("consumequeue: close %s: %w", s.f.Name(), err)
		}
	}
	q.segs = nil
	q.closed = true
	return first
}
