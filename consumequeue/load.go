package consumequeue

import (
	"fmt"
	"os"
	"path/filepath"
)

// scanFiles is how many trailing files recovery verifies entry by entry.
const scanFiles = 2

// load opens the files of q.dir and recovers min and max (see doc.go).
func (q *Queue) load() error {
	names, err := q.fs.ReadDir(q.dir)
	if err != nil {
		return fmt.Errorf("consumequeue: read dir %s: %w", q.dir, err)
	}
	q.dirMade = true
	if err := q.openSegments(names); err != nil {
		return err
	}
	if len(q.segs) == 0 {
		return nil
	}
	min, ok, err := q.firstValid()
	if err != nil {
		return err
	}
	if !ok {
		last := q.segs[len(q.segs)-1].start
		q.min, q.max = last, last
		return q.cutAfter(last)
	}
	q.min = min
	from := max(min, q.segs[max(0, len(q.segs)-scanFiles)].start)
	q.max, err = q.scanEnd(from)
	if err != nil {
		return err
	}
	if err := q.loadLast(); err != nil {
		return err
	}
	return q.cutAfter(q.max)
}

func (q *Queue) openSegments(names []string) error {
	for _, name := range names {
		start, ok := parseName(name, q.per)
		if !ok {
			q.log.Warn("ignoring foreign file", "dir", q.dir, "name", name)
			continue
		}
		if n := len(q.segs); n > 0 && q.segs[n-1].start+q.per != start {
			return fmt.Errorf("%w: %s: file %s does not follow %s",
				ErrCorrupt, q.dir, name, fileName(q.segs[n-1].start))
		}
		s, err := q.openSegment(filepath.Join(q.dir, name), start)
		if err != nil {
			return err
		}
		q.segs = append(q.segs, s)
	}
	return nil
}

func (q *Queue) openSegment(name string, start int64) (*segment, error) {
	f, err := q.fs.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: open %s: %w", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("consumequeue: stat %s: %w", name, err)
	}
	full := q.per * EntrySize
	if fi.Size() > full {
		f.Close()
		return nil, fmt.Errorf("%w: %s has %d bytes, more than %d (EntriesPerFile changed?)", ErrCorrupt, name, fi.Size(), full)
	}
	return &segment{start: start, f: f}, nil
}

// firstValid finds the first valid entry on disk.
func (q *Queue) firstValid() (int64, bool, error) {
	for _, s := range q.segs {
		var found int64 = -1
		err := q.scan(s.start, s.start+q.per, func(off int64, e Entry) bool {
			if e.valid() {
				found = off
				return false
			}
			return true
		})
		if err != nil || found >= 0 {
			return found, found >= 0, err
		}
	}
	return 0, false, nil
}

// scanEnd returns the offset of the first invalid entry at or after from,
// which must be valid.
func (q *Queue) scanEnd(from int64) (int64, error) {
	prev := int64(-1)
	if from > q.min {
		e, err := q.readEntry(from - 1)
		if err != nil {
			return 0, err
		}
		prev = e.CommitOffset
	}
	end := q.segs[len(q.segs)-1].start + q.per
	stop := end
	err := q.scan(from, end, func(off int64, e Entry) bool {
		if !e.valid() || e.CommitOffset <= prev {
			stop = off
			return false
		}
		prev = e.CommitOffset
		return true
	})
	return stop, err
}

// scan calls fn for the entries in [from,to) until it returns false.
func (q *Queue) scan(from, to int64, fn func(int64, Entry) bool) error {
	buf := chunkPool.Get().(*[chunkEntries * EntrySize]byte)
	defer chunkPool.Put(buf)
	for off := from; off < to; {
		s := q.segmentAt(off)
		k := min(to-off, chunkEntries, s.start+q.per-off)
		b := buf[:k*EntrySize]
		if err := readFull(s.f, b, (off-s.start)*EntrySize); err != nil {
			return err
		}
		for i := int64(0); i < k; i++ {
			if !fn(off+i, decode(b[i*EntrySize:])) {
				return nil
			}
		}
		off += k
	}
	return nil
}

// cutAfter zeroes what follows end in its file and removes later files, so
// stale entries can never rejoin the queue; short files are extended.
func (q *Queue) cutAfter(end int64) error {
	keep := len(q.segs)
	if s := q.segmentAt(end); s != nil {
		keep = int((s.start-q.segs[0].start)/q.per) + 1
		if err := q.zeroFrom(s, end); err != nil {
			return err
		}
	}
	for _, s := range q.segs[:keep] {
		if fi, err := s.f.Stat(); err == nil && fi.Size() < q.per*EntrySize {
			if err := s.f.Truncate(q.per * EntrySize); err != nil {
				return fmt.Errorf("consumequeue: extend %s: %w", s.f.Name(), err)
			}
		}
	}
	drop := q.segs[keep:]
	q.segs = q.segs[:keep]
	if len(drop) > 0 {
		q.log.Warn("removed files after recovered end", "dir", q.dir, "files", len(drop), "max", end)
	}
	return q.removeSegmentsReverse(drop)
}
