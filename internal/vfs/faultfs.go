package vfs

import (
	"os"
	"strings"
	"sync"
)

// Op names the operation an Injector is asked about.
type Op int

// The operations FaultFS can fail.
const (
	OpWrite Op = iota + 1
	OpSync
	OpOpen
	OpRemove
	OpRename
	OpTruncate
	OpSyncDir
)

// Injector decides the fate of one operation. For writes, n is the number
// of bytes asked for and allowed the number to let through before err is
// returned (a short write); for other operations allowed is ignored and a
// non-nil err fails the operation without performing it.
type Injector interface {
	MaybeFail(op Op, name string, n int) (allowed int, err error)
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op, name string, n int) (int, error)

// MaybeFail implements Injector.
func (f InjectorFunc) MaybeFail(op Op, name string, n int) (int, error) { return f(op, name, n) }

// FaultFS wraps an FS and lets an Injector fail its operations.
type FaultFS struct {
	inner FS
	mu    sync.Mutex
	in    Injector
}

// NewFaultFS wraps inner with no injector active.
func NewFaultFS(inner FS) *FaultFS { return &FaultFS{inner: inner} }

// Inject replaces the active injector; nil disables injection.
func (f *FaultFS) Inject(in Injector) {
	f.mu.Lock()
	f.in = in
	f.mu.Unlock()
}

func (f *FaultFS) ask(op Op, name string, n int) (int, error) {
	f.mu.Lock()
	in := f.in
	f.mu.Unlock()
	if in == nil {
		return n, nil
	}
	return in.MaybeFail(op, name, n)
}

// OpenFile implements FS.
func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if _, err := f.ask(OpOpen, name, 0); err != nil {
		return nil, err
	}
	file, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

// Remove implements FS.
func (f *FaultFS) Remove(name string) error {
	if _, err := f.ask(OpRemove, name, 0); err != nil {
		return err
	}
	return f.inner.Remove(name)
}

// RemoveAll implements FS.
func (f *FaultFS) RemoveAll(path string) error {
	if _, err := f.ask(OpRemove, path, 0); err != nil {
		return err
	}
	return f.inner.RemoveAll(path)
}

// Rename implements FS.
func (f *FaultFS) Rename(oldpath, newpath string) error {
	if _, err := f.ask(OpRename, oldpath, 0); err != nil {
		return err
	}
	return f.inner.Rename(oldpath, newpath)
}

// MkdirAll implements FS.
func (f *FaultFS) MkdirAll(path string, perm os.FileMode) error { return f.inner.MkdirAll(path, perm) }

// ReadDir implements FS.
func (f *FaultFS) ReadDir(dir string) ([]string, error) { return f.inner.ReadDir(dir) }

// Stat implements FS.
func (f *FaultFS) Stat(name string) (os.FileInfo, error) { return f.inner.Stat(name) }

// SyncDir implements FS.
func (f *FaultFS) SyncDir(dir string) error {
	if _, err := f.ask(OpSyncDir, dir, 0); err != nil {
		return err
	}
	return f.inner.SyncDir(dir)
}

type faultFile struct {
	File
	fs *FaultFS
}

func (f *faultFile) Write(p []byte) (int, error) {
	allowed, err := f.fs.ask(OpWrite, f.Name(), len(p))
	if err == nil {
		return f.File.Write(p)
	}
	n, werr := f.File.Write(p[:clampLen(allowed, len(p))])
	if werr != nil {
		return n, werr
	}
	return n, err
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	allowed, err := f.fs.ask(OpWrite, f.Name(), len(p))
	if err == nil {
		return f.File.WriteAt(p, off)
	}
	n, werr := f.File.WriteAt(p[:clampLen(allowed, len(p))], off)
	if werr != nil {
		return n, werr
	}
	return n, err
}

func (f *faultFile) Sync() error {
	if _, err := f.fs.ask(OpSync, f.Name(), 0); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if _, err := f.fs.ask(OpTruncate, f.Name(), 0); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// Mmap passes through to the inner file when it supports mapping.
func (f *faultFile) Mmap(offset int64, length int) ([]byte, error) {
	m, ok := f.File.(Mmapper)
	if !ok {
		return nil, errNoMmap
	}
	return m.Mmap(offset, length)
}

// Preallocate passes through to the inner file, or extends it.
func (f *faultFile) Preallocate(size int64) error {
	if p, ok := f.File.(Preallocator); ok {
		return p.Preallocate(size)
	}
	return f.File.Truncate(size)
}

func clampLen(n, limit int) int {
	return max(0, min(n, limit))
}

func matches(name, match string) bool { return match == "" || strings.Contains(name, match) }

// FailOnce fails the next op on a file whose name contains match ("" = any)
// with err (ErrInjected when nil), then lets everything through.
func FailOnce(op Op, match string, err error) Injector {
	return FailAfter(op, match, 0, err).(*countInjector).once()
}

// FailAfter lets okCalls matching operations succeed and fails every one
// after that with err (ErrInjected when nil). A failed write writes nothing.
func FailAfter(op Op, match string, okCalls int, err error) Injector {
	if err == nil {
		err = ErrInjected
	}
	return &countInjector{op: op, match: match, ok: okCalls, err: err}
}

// ShortWrite makes the next matching write write only allowed bytes and
// then return err (ErrInjected when nil); later writes succeed.
func ShortWrite(match string, allowed int, err error) Injector {
	if err == nil {
		err = ErrInjected
	}
	return &countInjector{op: OpWrite, match: match, err: err, allowed: allowed, single: true}
}

type countInjector struct {
	mu      sync.Mutex
	op      Op
	match   string
	ok      int
	err     error
	allowed int
	single  bool
	fired   bool
}

func (c *countInjector) once() *countInjector { c.single = true; return c }

// MaybeFail implements Injector.
func (c *countInjector) MaybeFail(op Op, name string, n int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if op != c.op || !matches(name, c.match) || (c.single && c.fired) {
		return n, nil
	}
	if c.ok > 0 {
		c.ok--
		return n, nil
	}
	c.fired = true
	return c.allowed, c.err
}
