package vfs

import (
	"os"
	"path/filepath"
	"sort"
	"syscall"
)

// OS is the real file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &osFile{File: f}, nil
}

func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }

func (osFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// osFile adds mapping and preallocation to *os.File.
type osFile struct{ *os.File }

func (f *osFile) Mmap(offset int64, length int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), offset, length, syscall.PROT_READ, syscall.MAP_SHARED)
}

func (f *osFile) MmapWritable(offset int64, length int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), offset, length, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

func (f *osFile) Preallocate(size int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if err == syscall.EOPNOTSUPP || err == syscall.ENOSYS {
		// Some file systems (tmpfs on old kernels, overlay) cannot reserve
		// space; extending the size still gives sequential writers a file
		// that does not grow under them.
		return f.Truncate(size)
	}
	return err
}

// Munmap releases a mapping returned by Mmapper.Mmap.
func Munmap(b []byte) error { return syscall.Munmap(b) }
