package indexfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/internal/vfs"
)

// Store is a broker's set of index files.
type Store struct {
	cfg Config
	fs  vfs.FS
	log hclog.Logger

	mu      sync.RWMutex
	files   []*indexFile // oldest first; the last one takes puts
	created time.Time    // creation time of the newest file
	closed  bool
	dropped bool // Open dropped an unreadable file: Verify reports it
}

// Open opens the index in cfg.Dir, creating the directory if needed, and
// loads every index file found there (see doc.go for crash recovery).
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, fs: cfg.FS, log: cfg.Logger.Named("indexfile")}
	if err := s.fs.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("indexfile: mkdir %s: %w", cfg.Dir, err)
	}
	if err := s.load(); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

func (s *Store) path(name string) string { return filepath.Join(s.cfg.Dir, name) }

func (s *Store) load() error {
	names, err := s.fs.ReadDir(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("indexfile: read dir %s: %w", s.cfg.Dir, err)
	}
	for _, name := range names {
		t, ok := parseName(name, s.cfg.Now().Location())
		if !ok {
			s.log.Warn("ignoring foreign file", "name", name)
			continue
		}
		x, err := s.openFile(name)
		if errors.Is(err, errBadHeader) {
			// Derived data: drop it, Verify reports it, the store rebuilds.
			s.log.Warn("dropping unreadable index file", "name", name, "error", err)
			s.dropped = true
			if err := s.fs.Remove(s.path(name)); err != nil {
				return fmt.Errorf("indexfile: remove %s: %w", name, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		s.files = append(s.files, x)
		s.created = t
	}
	if n := len(s.files); n > 0 {
		// Older files were flushed whole before the next one was created.
		if err := s.repairSlots(s.files[n-1]); err != nil {
			return err
		}
	}
	s.log.Info("opened", "dir", s.cfg.Dir, "files", len(s.files))
	return nil
}

func parseName(name string, loc *time.Location) (time.Time, bool) {
	if len(name) != nameLen || strings.Trim(name, "0123456789") != "" {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation(nameLayout, name[:14]+"."+name[14:], loc)
	return t, err == nil
}

func formatName(t time.Time) string { return strings.Replace(t.Format(nameLayout), ".", "", 1) }

// Put indexes key (built with Key) for the message at commitOffset stored
// at storeTimestamp (ms). The caller puts each of a message's KEYS and its
// UNIQ_KEY. A full file is flushed and a new one started.
func (s *Store) Put(key string, commitOffset, storeTimestamp int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	x, err := s.writable()
	if err != nil {
		return err
	}
	return x.put(key, commitOffset, storeTimestamp)
}

// writable returns the newest file, rolling to a new one when it is full.
func (s *Store) writable() (*indexFile, error) {
	if n := len(s.files); n > 0 && !s.files[n-1].full() {
		return s.files[n-1], nil
	}
	if n := len(s.files); n > 0 {
		if err := s.files[n-1].flush(); err != nil {
			return nil, err
		}
	}
	// Names must sort by creation even if the clock steps back or two
	// files are created in one millisecond.
	t := s.cfg.Now()
	if !s.created.IsZero() && !t.After(s.created) {
		t = s.created.Add(time.Millisecond)
	}
	t = t.Truncate(time.Millisecond)
	x, err := s.createFile(formatName(t))
	if err != nil {
		return nil, err
	}
	s.files = append(s.files, x)
	s.created = t
	s.log.Info("created index file", "name", x.name)
	return x, nil
}

func (s *Store) createFile(name string) (*indexFile, error) {
	path := s.path(name)
	f, err := s.fs.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("indexfile: create %s: %w", path, err)
	}
	if err := f.Truncate(s.cfg.fileSize()); err != nil {
		f.Close()
		return nil, fmt.Errorf("indexfile: size %s: %w", path, err)
	}
	if err := s.fs.SyncDir(s.cfg.Dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("indexfile: sync dir %s: %w", s.cfg.Dir, err)
	}
	x := &indexFile{name: name, f: f, slotNum: int64(s.cfg.SlotNum), indexNum: int32(s.cfg.IndexNum)}
	x.hdr.indexCount = 1
	x.mmap(s.cfg.fileSize(), s.log)
	return x, nil
}

// Query returns the commit offsets of up to max entries whose key hash is
// key's and whose store time is in [begin, end] (ms, at one-second
// resolution), newest first, walking the files whose time range overlaps,
// newest file first. Hashes collide: the caller checks the key on each
// message.
func (s *Store) Query(key string, begin, end int64, max int) ([]int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	if max <= 0 {
		return nil, nil
	}
	out := make([]int64, 0, min(max, 64))
	hash := keyHash(key)
	for i := len(s.files) - 1; i >= 0 && len(out) < max; i-- {
		x := s.files[i]
		if !x.overlaps(begin, end) {
			continue
		}
		var err error
		if out, err = x.collect(out, hash, begin, end, max); err != nil {
			return out, err
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Flush makes every put durable.
func (s *Store) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	var errs []error
	for _, x := range s.files {
		errs = append(errs, x.flush())
	}
	return errors.Join(errs...)
}

// DeleteBefore deletes the oldest files whose last commit offset is below
// minCommitOffset (the commitlog's first offset after retention). The
// newest file is kept: it takes the puts.
func (s *Store) DeleteBefore(minCommitOffset int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	n := 0
	for n < len(s.files)-1 && s.files[n].hdr.endPhy < minCommitOffset {
		n++
	}
	if n == 0 {
		return nil
	}
	for _, x := range s.files[:n] {
		x.close()
		if err := s.fs.Remove(s.path(x.name)); err != nil {
			return fmt.Errorf("indexfile: remove %s: %w", x.name, err)
		}
		s.log.Info("deleted index file", "name", x.name, "endPhyOffset", x.hdr.endPhy)
	}
	s.files = append([]*indexFile(nil), s.files[n:]...)
	if err := s.fs.SyncDir(s.cfg.Dir); err != nil {
		return fmt.Errorf("indexfile: sync dir %s: %w", s.cfg.Dir, err)
	}
	return nil
}

// Files returns the names of the index files, oldest first.
func (s *Store) Files() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, len(s.files))
	for i, x := range s.files {
		names[i] = x.name
	}
	return names
}

// Close flushes and closes the files: unlike the consumequeue, the header
// only counts flushed entries, so a clean shutdown must write it.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, x := range s.files {
		errs = append(errs, x.flush())
	}
	errs = append(errs, s.closeFiles())
	return errors.Join(errs...)
}

func (s *Store) closeFiles() error {
	var errs []error
	for _, x := range s.files {
		errs = append(errs, x.close())
	}
	s.files = nil
	return errors.Join(errs...)
}
