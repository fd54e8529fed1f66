package commitlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/hashicorp/raft"
)

// recover rebuilds the published state from the files: segments before
// the checkpoint's are trusted (they were synced with their index when
// sealed); the checkpoint's segment is scanned from the checkpoint and every
// later one from its start, stopping at the first record whose length, CRC
// or index is wrong. What follows is truncated.
func (l *Log) recover() error {
	if _, err := l.fs.Stat(l.path(abortName)); err == nil {
		l.logger.Warn("abort file found: previous run did not close cleanly; recovering from checkpoint")
	}
	for _, tmp := range []string{nextName, ckptTempName} {
		if err := l.fs.Remove(l.path(tmp)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("commitlog: remove %s: %w", tmp, err)
		}
	}
	if err := l.readRecovering(); err != nil {
		return err
	}
	if err := l.openSegments(); err != nil {
		return err
	}
	ck, ok := l.readCheckpoint()
	if ok {
		l.recov.synced = ck.index
	}
	from := len(l.segs)
	if ok && ck.segBase != 0 {
		from = sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base >= ck.segBase })
	}
	if !ok || ck.segBase == 0 || from == len(l.segs) || l.segs[from].base != ck.segBase {
		from, ck = 0, checkpoint{}
	}
	for i := 0; i < from; i++ {
		err := l.trust(l.segs[i])
		if err == nil {
			err = l.verifyPrefix(l.segs[i], l.segs[i].count, l.segs[i].size)
		}
		if err != nil {
			l.logger.Warn("sealed segment inconsistent with its index or corrupt; rescanning", "segment", l.segs[i].base, "error", err)
			from, ck = i, checkpoint{}
			break
		}
	}
	if err := l.scanFrom(from, ck); err != nil {
		return err
	}
	if err := l.finishRecovery(); err != nil {
		return err
	}
	l.clearRecovering()
	return nil
}

func (l *Log) openSegments() error {
	names, err := l.fs.ReadDir(l.cfg.Dir)
	if err != nil {
		return fmt.Errorf("commitlog: list %s: %w", l.cfg.Dir, err)
	}
	for _, name := range names {
		base, ok := parseSegmentName(name)
		if !ok {
			continue
		}
		s, err := openSegmentFiles(l.fs, l.cfg.Dir, base, false)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
	}
	return nil
}

func (l *Log) readCheckpoint() (checkpoint, bool) {
	f, err := l.fs.OpenFile(l.path(ckptName), os.O_RDONLY, 0)
	if err != nil {
		return checkpoint{}, false
	}
	defer f.Close()
	b := make([]byte, checkpointSize+1)
	n, _ := io.ReadFull(f, b)
	c, err := decodeCheckpoint(b[:n])
	if err != nil {
		l.logger.Warn("checkpoint unreadable; scanning every segment", "error", err)
		return checkpoint{}, false
	}
	return c, true
}

// trust loads a sealed segment's state from its entry index.
func (l *Log) trust(s *segment) error {
	fi, err := s.idx.Stat()
	if err != nil {
		return err
	}
	if fi.Size()%entrySize != 0 || fi.Size() == 0 {
		return fmt.Errorf("%w: entry index size %d", ErrCorrupt, fi.Size())
	}
	s.count = uint64(fi.Size() / entrySize)
	first, err1 := s.readEntry(s.base)
	last, err2 := s.readEntry(s.last())
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	sf, err := s.f.Stat()
	if err != nil {
		return err
	}
	s.size = last.pos + int64(last.length)
	if sf.Size() != s.size {
		return fmt.Errorf("%w: segment size %d, index says %d", ErrCorrupt, sf.Size(), s.size)
	}
	s.startCO, s.endCO, s.sealed, s.modTime = first.commitOf, last.end(), true, sf.ModTime()
	return nil
}

// scanFrom scans segs[from:], the first from the checkpoint when it names
// it, and drops whatever does not continue the log.
func (l *Log) scanFrom(from int, ck checkpoint) error {
	next, end := uint64(0), int64(0)
	if from > 0 {
		prev := l.segs[from-1]
		next, end = prev.last()+1, prev.endCO
	}
	for i := from; i < len(l.segs); i++ {
		s := l.segs[i]
		if next != 0 && s.base != next {
			l.logger.Error("segment does not continue the log; removing it and all after it",
				"segment", s.base, "expected", next)
			return l.dropFrom(i)
		}
		start := l.scanStart(s, ck, end)
		if err := l.scanSegment(i, start); err != nil {
			return err
		}
		next, end = s.base+s.count, s.endCO
		ck = checkpoint{}
	}
	return nil
}

// scanStart is where scanning s begins: at the checkpoint when its entries
// before it check out, else at the start.
func (l *Log) scanStart(s *segment, ck checkpoint, end int64) checkpoint {
	zero := checkpoint{segBase: s.base, index: s.base - 1, endCO: end}
	s.count = 0 // a failed trust may have left its guess
	if ck.segBase != s.base || ck.index < s.base {
		return zero
	}
	if fi, err := s.f.Stat(); err != nil || ck.pos > fi.Size() {
		l.logger.Warn("checkpoint beyond its segment's end; scanning it whole", "segment", s.base)
		return zero
	}
	s.count = ck.index - s.base + 1
	first, err1 := s.readEntry(s.base)
	last, err2 := s.readEntry(ck.index)
	if err1 != nil || err2 != nil || last.pos+int64(last.length) != ck.pos || last.end() != ck.endCO {
		l.logger.Warn("checkpoint does not match its segment; scanning it whole", "segment", s.base)
		s.count = 0
		return zero
	}
	if err := l.verifyPrefix(s, s.count, ck.pos); err != nil {
		l.logger.Warn("corrupt record before the checkpoint; scanning its segment whole", "segment", s.base, "error", err)
		s.count = 0
		return zero
	}
	s.startCO = first.commitOf
	return ck
}

// scanSegment reads records of segs[k] from the start point, rewrites
// their entry index records and truncates the segment and index after the
// last good record, raising the recovering marker first when what it cuts
// held synced entries (noteCut).
func (l *Log) scanSegment(k int, st checkpoint) error {
	s := l.segs[k]
	fi, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("commitlog: stat segment %d: %w", s.base, err)
	}
	s.size, s.endCO, s.modTime = st.pos, st.endCO, fi.ModTime()
	if s.count == 0 {
		s.startCO = st.endCO
	}
	left := fi.Size() - st.pos
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, st.pos, left), 1<<20)
	var ib []byte
	var lg raft.Log
	reason := ""
	for {
		rec, why := readRecord(r, s.base+s.count, left)
		if rec == nil {
			reason = why
			break
		}
		left -= int64(len(rec))
		decodeRecord(rec, &lg)
		e := l.span(&lg, s.size, s.endCO)
		if s.count == 0 {
			s.startCO = e.commitOf
		}
		ib = appendEntry(ib, e)
		s.count++
		s.size += int64(len(rec))
		s.endCO = e.end()
	}
	if fi.Size() > s.size && reason != "end" {
		l.logger.Error("torn or corrupt tail truncated", "segment", s.base, "at", s.size,
			"bytes_dropped", fi.Size()-s.size, "reason", reason, "last_index", s.base+s.count-1)
	}
	if fi.Size() > s.size {
		if err := l.noteCut(k, s.base+s.count, s.size); err != nil {
			return err
		}
	}
	return l.rewriteIndex(s, st, ib, fi.Size())
}

// rewriteIndex writes the rebuilt index records and cuts both files.
func (l *Log) rewriteIndex(s *segment, st checkpoint, ib []byte, fileSize int64) error {
	off := int64(st.index-s.base+1) * entrySize
	var errs []error
	if len(ib) > 0 {
		_, err := s.idx.WriteAt(ib, off)
		errs = append(errs, err)
	}
	errs = append(errs, s.idx.Truncate(off+int64(len(ib))))
	if fileSize != s.size {
		errs = append(errs, s.f.Truncate(s.size))
	}
	errs = append(errs, s.f.Sync(), s.idx.Sync())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("commitlog: recover segment %d: %w", s.base, err)
	}
	return nil
}

// readRecord returns the next whole, CRC-checked record holding index
// want, or nil and why it stopped ("end" for a clean end of data). left is
// the number of bytes the reader still holds: a torn length beyond it is
// rejected before anything is allocated for it.
func readRecord(r *bufio.Reader, want uint64, left int64) ([]byte, string) {
	hdr, err := r.Peek(frameHeaderSize)
	if err != nil {
		if len(hdr) == 0 {
			return nil, "end"
		}
		return nil, "short header"
	}
	n := frameLen(hdr)
	if n == 0 {
		if allZero(hdr) {
			return nil, "end"
		}
		return nil, "bad length"
	}
	if int64(n) > left {
		return nil, "short record"
	}
	rec := make([]byte, n)
	if _, err := io.ReadFull(r, rec); err != nil {
		return nil, "short record"
	}
	if err := checkRecord(rec); err != nil {
		return nil, err.Error()
	}
	if got := recordIndex(rec); got != want {
		return nil, fmt.Sprintf("index %d, expected %d", got, want)
	}
	return rec, ""
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// dropFrom closes and removes segs[i:].
func (l *Log) dropFrom(i int) error {
	var errs []error
	for _, s := range l.segs[i:] {
		errs = append(errs, s.close(), removeFiles(l.fs, l.cfg.Dir, s.base))
	}
	l.segs = l.segs[:i]
	errs = append(errs, l.fs.SyncDir(l.cfg.Dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("commitlog: drop segments: %w", err)
	}
	return nil
}

// finishRecovery drops empty segments other than a trailing active one,
// seals all but the last and sets the log's counters.
func (l *Log) finishRecovery() error {
	kept := l.segs[:0]
	var errs []error
	for i, s := range l.segs {
		if s.count == 0 && (i < len(l.segs)-1 || len(kept) == 0) {
			errs = append(errs, s.close(), removeFiles(l.fs, l.cfg.Dir, s.base))
			continue
		}
		kept = append(kept, s)
	}
	l.segs = kept
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("commitlog: drop empty segments: %w", err)
	}
	for i, s := range l.segs {
		s.sealed = i < len(l.segs)-1
		s.mapLen = l.cfg.SegmentSize
	}
	if act := l.active(); act != nil {
		l.lastIndex, l.endCO = act.base+act.count-1, act.endCO
	}
	return nil
}
