package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// MemFS is an in-memory FS for tests that models what survives a crash:
// file contents survive up to their last File.Sync, and a file's directory
// entry (creation, rename, removal) survives only once its directory was
// synced with SyncDir. Directories themselves are durable when created.
type MemFS struct {
	mu      sync.Mutex
	dirs    map[string]bool
	names   map[string]*memNode // current directory entries
	durable map[string]*memNode // entries as of each directory's last SyncDir
	dead    bool                // LosePower: every change fails with ErrPowerLost
}

// ErrPowerLost is what a MemFS whose power was cut (LosePower) answers
// every change with.
var ErrPowerLost = errors.New("vfs: power lost")

type memNode struct {
	data    []byte
	synced  []byte
	modTime time.Time
}

// NewMem returns an empty in-memory file system.
func NewMem() *MemFS {
	return &MemFS{
		dirs:    map[string]bool{"/": true, ".": true},
		names:   map[string]*memNode{},
		durable: map[string]*memNode{},
	}
}

// CrashClone returns a file system holding what a power loss at this moment
// would leave: every durable directory entry, with the file's synced bytes.
func (m *MemFS) CrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashCloneLocked()
}

// LosePower cuts m's power: it returns what m's disk holds at this instant
// (CrashClone) and makes every later change on m and its open files — a
// write, sync, truncate, create, remove, rename — fail with ErrPowerLost,
// atomically with respect to every write and sync: a sync either finished
// before the cut, and is in the clone, or fails. Reads still see what was
// written, so a process that has not noticed the cut does not trip on
// them; nothing it does can become durable.
func (m *MemFS) LosePower() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dead = true
	return m.crashCloneLocked()
}

func (m *MemFS) crashCloneLocked() *MemFS {
	c := NewMem()
	for d := range m.dirs {
		c.dirs[d] = true
	}
	copies := map[*memNode]*memNode{}
	for name, n := range m.durable {
		cp, ok := copies[n]
		if !ok {
			b := append([]byte(nil), n.synced...)
			cp = &memNode{data: b, synced: append([]byte(nil), b...), modTime: n.modTime}
			copies[n] = cp
		}
		c.names[name] = cp
		c.durable[name] = cp
	}
	return c
}

func clean(name string) string { return filepath.Clean(name) }

func (m *MemFS) parentExists(name string) bool { return m.dirs[path.Dir(name)] }

// OpenFile implements FS.
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead && flag&(os.O_CREATE|os.O_WRONLY|os.O_RDWR|os.O_TRUNC|os.O_APPEND) != 0 {
		return nil, ErrPowerLost
	}
	if m.dirs[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("is a directory")}
	}
	n, ok := m.names[name]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case !ok && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case !ok:
		if !m.parentExists(name) {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		n = &memNode{modTime: time.Now()}
		m.names[name] = n
	}
	if flag&os.O_TRUNC != 0 {
		n.data = n.data[:0]
	}
	return &memFile{fs: m, node: n, name: name, flag: flag}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return ErrPowerLost
	}
	if _, ok := m.names[name]; ok {
		delete(m.names, name)
		return nil
	}
	if m.dirs[name] {
		prefix := name + "/"
		for n := range m.names {
			if strings.HasPrefix(n, prefix) {
				return &fs.PathError{Op: "remove", Path: name, Err: fmt.Errorf("directory not empty")}
			}
		}
		for d := range m.dirs {
			if strings.HasPrefix(d, prefix) {
				return &fs.PathError{Op: "remove", Path: name, Err: fmt.Errorf("directory not empty")}
			}
		}
		delete(m.dirs, name)
		return nil
	}
	return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
}

// RemoveAll implements FS.
func (m *MemFS) RemoveAll(p string) error {
	p = clean(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return ErrPowerLost
	}
	prefix := p + "/"
	for n := range m.names {
		if n == p || strings.HasPrefix(n, prefix) {
			delete(m.names, n)
		}
	}
	for d := range m.dirs {
		if d == p || strings.HasPrefix(d, prefix) {
			delete(m.dirs, d)
		}
	}
	return nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldpath, newpath string) error {
	oldpath, newpath = clean(oldpath), clean(newpath)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return ErrPowerLost
	}
	n, ok := m.names[oldpath]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	if !m.parentExists(newpath) {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	delete(m.names, oldpath)
	m.names[newpath] = n
	return nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(p string, perm os.FileMode) error {
	p = clean(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return ErrPowerLost
	}
	for d := p; ; d = path.Dir(d) {
		if _, isFile := m.names[d]; isFile {
			return &fs.PathError{Op: "mkdir", Path: d, Err: fmt.Errorf("not a directory")}
		}
		m.dirs[d] = true
		if d == "/" || d == "." {
			return nil
		}
	}
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	var out []string
	for n := range m.names {
		if path.Dir(n) == dir {
			out = append(out, path.Base(n))
		}
	}
	for d := range m.dirs {
		if d != dir && path.Dir(d) == dir {
			out = append(out, path.Base(d))
		}
	}
	sort.Strings(out)
	return out, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.names[name]; ok {
		return memInfo{name: path.Base(name), size: int64(len(n.data)), mod: n.modTime}, nil
	}
	if m.dirs[name] {
		return memInfo{name: path.Base(name), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

// SyncDir implements FS: the entries directly in dir become durable as they
// are now, including removals.
func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return ErrPowerLost
	}
	if !m.dirs[dir] {
		return &fs.PathError{Op: "syncdir", Path: dir, Err: fs.ErrNotExist}
	}
	for n := range m.durable {
		if path.Dir(n) == dir {
			delete(m.durable, n)
		}
	}
	for n, node := range m.names {
		if path.Dir(n) == dir {
			m.durable[n] = node
		}
	}
	return nil
}

type memInfo struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}

// memFile is an open MemFS file.
type memFile struct {
	fs     *MemFS
	node   *memNode
	name   string
	flag   int
	off    int64
	closed bool
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) check(write bool) error {
	if write && f.fs.dead {
		return ErrPowerLost
	}
	if f.closed {
		return errClosed
	}
	if write && f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrPermission}
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.off)
	f.fs.mu.Lock()
	f.off += int64(n)
	f.fs.mu.Unlock()
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check(false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	off := f.off
	if f.flag&os.O_APPEND != 0 {
		off = int64(len(f.node.data))
	}
	f.fs.mu.Unlock()
	n, err := f.WriteAt(p, off)
	f.fs.mu.Lock()
	f.off = off + int64(n)
	f.fs.mu.Unlock()
	return n, err
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check(true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "writeat", Path: f.name, Err: fs.ErrInvalid}
	}
	end := off + int64(len(p))
	if end > int64(len(f.node.data)) {
		f.node.data = grow(f.node.data, int(end))
	}
	copy(f.node.data[off:], p)
	f.node.modTime = time.Now()
	return len(p), nil
}

func grow(b []byte, n int) []byte {
	if n <= cap(b) {
		old := len(b)
		b = b[:n]
		clear(b[old:])
		return b
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check(false); err != nil {
		return 0, err
	}
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = f.off
	case io.SeekEnd:
		base = int64(len(f.node.data))
	default:
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	if base+offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	f.off = base + offset
	return f.off, nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check(true); err != nil {
		return err
	}
	f.node.synced = append(f.node.synced[:0], f.node.data...)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check(true); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrInvalid}
	}
	if size <= int64(len(f.node.data)) {
		f.node.data = f.node.data[:size]
	} else {
		f.node.data = grow(f.node.data, int(size))
	}
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check(false); err != nil {
		return nil, err
	}
	return memInfo{name: path.Base(f.name), size: int64(len(f.node.data)), mod: f.node.modTime}, nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return errClosed
	}
	f.closed = true
	return nil
}
