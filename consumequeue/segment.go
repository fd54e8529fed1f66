package consumequeue

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/raftmq/raftmq/internal/vfs"
)

// segment is one consumequeue file.
type segment struct {
	start int64 // queue offset of its first entry
	f     vfs.File
	dirty atomic.Bool // written since the last Sync
}

func fileName(start int64) string {
	return fmt.Sprintf("%0*d", nameDigits, start*EntrySize)
}

// parseName returns the start queue offset a file name encodes.
func parseName(name string, per int64) (int64, bool) {
	if len(name) != nameDigits {
		return 0, false
	}
	n, err := strconv.ParseInt(name, 10, 64)
	if err != nil || n < 0 || n%(per*EntrySize) != 0 {
		return 0, false
	}
	return n / EntrySize, true
}

// createSegment creates the file of start at full size. Its directory
// entries become durable with the next flush, like its data: the first
// entries of thousands of new queues then cost no directory fsyncs each.
func (q *Queue) createSegment(start int64) (*segment, error) {
	if !q.dirMade {
		if err := q.fs.MkdirAll(q.dir, 0o755); err != nil {
			return nil, fmt.Errorf("consumequeue: mkdir %s: %w", q.dir, err)
		}
		q.dirMade = true
	}
	name := filepath.Join(q.dir, fileName(start))
	f, err := q.fs.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: create %s: %w", name, err)
	}
	if err := f.Truncate(q.per * EntrySize); err != nil {
		f.Close()
		return nil, fmt.Errorf("consumequeue: size %s: %w", name, err)
	}
	q.dirsDirty.Store(true)
	s := &segment{start: start, f: f}
	s.dirty.Store(true)
	return s, nil
}

// removeSegments closes and deletes segs, then syncs the directory so a
// crash cannot resurrect them.
func (q *Queue) removeSegments(segs []*segment) error {
	if len(segs) == 0 {
		return nil
	}
	for _, s := range segs {
		s.f.Close()
		if err := q.fs.Remove(s.f.Name()); err != nil {
			return fmt.Errorf("consumequeue: remove %s: %w", s.f.Name(), err)
		}
	}
	if err := q.fs.SyncDir(q.dir); err != nil {
		return fmt.Errorf("consumequeue: sync dir %s: %w", q.dir, err)
	}
	return nil
}

// zeroFrom makes every entry of s from queue offset off on read as zero.
// Truncating down and up again keeps the file sparse.
func (q *Queue) zeroFrom(s *segment, off int64) error {
	if err := s.f.Truncate((off - s.start) * EntrySize); err != nil {
		return fmt.Errorf("consumequeue: truncate %s: %w", s.f.Name(), err)
	}
	if err := s.f.Truncate(q.per * EntrySize); err != nil {
		return fmt.Errorf("consumequeue: truncate %s: %w", s.f.Name(), err)
	}
	s.dirty.Store(true)
	return nil
}
