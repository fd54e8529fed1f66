package commitlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/raftmq/raftmq/internal/vfs"
)

const (
	segmentExt   = ".log"
	indexExt     = ".idx"
	nameDigits   = 20
	abortName    = "abort"
	ckptName     = "checkpoint"
	ckptTempName = "checkpoint.tmp"
	nextName     = "next.tmp" // preallocated, not yet named segment
)

// segment is one segment file and its entry index file. base, f and idx
// never change; count, size, sealed and modTime change under Log.mu.
type segment struct {
	base    uint64 // raft index of the first entry; the file's name
	count   uint64 // published entries
	size    int64  // published record bytes
	startCO int64  // commit offset column of the first entry
	endCO   int64  // end of the last entry's messages
	f       vfs.File
	idx     vfs.File
	sealed  bool
	modTime time.Time
	// mapLen is how much of the file a mapping made while the segment is
	// active covers: the segment size, so the mapping serves what is
	// appended later. Only published bytes are ever read from it, and
	// those were written, so it never touches a page past the file's end.
	mapLen int64

	// The mapping of a sealed segment is made on first read and released
	// only under Log.mu held exclusively, while no reader copies from it.
	mmOnce  sync.Once
	mm      []byte
	mmErr   error
	idxOnce sync.Once
	idxMM   []byte

	// verified has a bit per entry whose record CRC ReadMessage checked,
	// so a pull checks an entry once rather than once per message.
	vmu      sync.Mutex
	verified []uint64
}

func (s *segment) isVerified(i uint64) bool {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	w := (i - s.base) / 64
	return w < uint64(len(s.verified)) && s.verified[w]&(1<<((i-s.base)%64)) != 0
}

func (s *segment) markVerified(i uint64) {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	w := int((i - s.base) / 64)
	for len(s.verified) <= w {
		s.verified = append(s.verified, 0)
	}
	s.verified[w] |= 1 << ((i - s.base) % 64)
}

// forgetVerified drops the marks; the entries from the mark on change.
func (s *segment) forgetVerified() {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	s.verified = nil
}

func (s *segment) last() uint64 { return s.base + s.count - 1 }

func segmentName(dir string, base uint64, ext string) string {
	return filepath.Join(dir, fmt.Sprintf("%0*d%s", nameDigits, base, ext))
}

// parseSegmentName returns the base of a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	stem, ok := strings.CutSuffix(name, segmentExt)
	if !ok || len(stem) != nameDigits {
		return 0, false
	}
	base, err := strconv.ParseUint(stem, 10, 64)
	return base, err == nil
}

// readEntry reads the entry index record of raft index i.
func (s *segment) readEntry(i uint64) (entry, error) {
	var b [entrySize]byte
	return s.readEntryInto(i, b[:], false)
}

// readEntryInto is readEntry with a caller's scratch buffer, so a binary
// search allocates once rather than per probe. With useMmap a sealed
// segment's index is read from its mapping.
func (s *segment) readEntryInto(i uint64, b []byte, useMmap bool) (entry, error) {
	off := int64(i-s.base) * entrySize
	if useMmap && s.sealed {
		if mm := s.idxMapping(); off+entrySize <= int64(len(mm)) {
			e, err := decodeEntry(mm[off : off+entrySize])
			if err != nil {
				return entry{}, fmt.Errorf("entry %d in %s: %w", i, s.idx.Name(), err)
			}
			return e, nil
		}
	}
	if _, err := s.idx.ReadAt(b[:entrySize], off); err != nil {
		return entry{}, fmt.Errorf("commitlog: read entry index %d: %w", i, err)
	}
	e, err := decodeEntry(b[:entrySize])
	if err != nil {
		return entry{}, fmt.Errorf("entry %d in %s: %w", i, s.idx.Name(), err)
	}
	return e, nil
}

// mapping returns the read-only mapping of the segment, or nil when the
// file system cannot map. A sealed segment is mapped to its size, an
// active one to max(size, mapLen).
func (s *segment) mapping() []byte {
	s.mmOnce.Do(func() {
		m, ok := s.f.(vfs.Mmapper)
		n := s.size
		if !s.sealed {
			n = max(n, s.mapLen)
		}
		if !ok || n == 0 {
			s.mmErr = errors.New("no mmap")
			return
		}
		s.mm, s.mmErr = m.Mmap(0, int(n))
	})
	if s.mmErr != nil {
		return nil
	}
	return s.mm
}

// idxMapping returns the mapping of a sealed segment's entry index, or nil.
func (s *segment) idxMapping() []byte {
	s.idxOnce.Do(func() {
		if m, ok := s.idx.(vfs.Mmapper); ok && s.count > 0 {
			mm, err := m.Mmap(0, int(s.count)*entrySize)
			if err == nil {
				s.idxMM = mm
			}
		}
	})
	return s.idxMM
}

// unmap releases the mappings; the caller holds Log.mu exclusively.
func (s *segment) unmap() error {
	var errs []error
	for _, m := range [][]byte{s.mm, s.idxMM} {
		if m != nil {
			errs = append(errs, vfs.Munmap(m))
		}
	}
	s.mm, s.mmErr, s.mmOnce = nil, nil, sync.Once{}
	s.idxMM, s.idxOnce = nil, sync.Once{}
	return errors.Join(errs...)
}

// readAt copies the bytes [pos, pos+len(dst)) of the segment into dst,
// from the mapping when asked and available.
func (s *segment) readAt(dst []byte, pos int64, useMmap bool) error {
	if useMmap {
		if mm := s.mapping(); mm != nil && pos+int64(len(dst)) <= int64(len(mm)) {
			copy(dst, mm[pos:])
			return nil
		}
	}
	if _, err := s.f.ReadAt(dst, pos); err != nil {
		return fmt.Errorf("commitlog: read %s at %d: %w", s.f.Name(), pos, err)
	}
	return nil
}

func (s *segment) close() error {
	return errors.Join(s.unmap(), s.f.Close(), s.idx.Close())
}

// removeFiles deletes the segment's files; the segment must be closed.
func removeFiles(fsys vfs.FS, dir string, base uint64) error {
	var errs []error
	for _, ext := range []string{segmentExt, indexExt} {
		if err := fsys.Remove(segmentName(dir, base, ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// openSegmentFiles opens (creating if asked) the two files of a segment.
func openSegmentFiles(fsys vfs.FS, dir string, base uint64, create bool) (*segment, error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	f, err := fsys.OpenFile(segmentName(dir, base, segmentExt), flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("commitlog: open segment %d: %w", base, err)
	}
	idx, err := fsys.OpenFile(segmentName(dir, base, indexExt), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("commitlog: open entry index %d: %w", base, err)
	}
	return &segment{base: base, f: f, idx: idx}, nil
}
