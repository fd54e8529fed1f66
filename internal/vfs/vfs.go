// Package vfs is the small file-system interface under every storage
// package (commitlog, consumequeue, indexfile). Production code uses OS;
// tests use MemFS, whose CrashClone keeps only what was synced, and FaultFS,
// which injects failed writes, failed fsyncs and short writes.
//
// The interface is deliberately small: it holds exactly the calls the
// storage packages make, so a fake can implement all of it faithfully.
package vfs

import (
	"errors"
	"io"
	"os"
)

// FS is a file system.
type FS interface {
	// OpenFile opens name with os.O_* flags (O_CREATE, O_RDWR, O_WRONLY,
	// O_RDONLY, O_TRUNC, O_EXCL, O_APPEND).
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove removes a file or an empty directory. A missing name returns
	// an error for which errors.Is(err, os.ErrNotExist) holds.
	Remove(name string) error
	// RemoveAll removes path and everything below it; a missing path is
	// not an error.
	RemoveAll(path string) error
	// Rename renames oldpath to newpath, replacing newpath if it exists.
	Rename(oldpath, newpath string) error
	// MkdirAll creates path and its parents.
	MkdirAll(path string, perm os.FileMode) error
	// ReadDir returns the base names in dir, sorted.
	ReadDir(dir string) ([]string, error)
	// Stat describes name.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory entries of dir (creations, renames,
	// removals) durable.
	SyncDir(dir string) error
}

// File is an open file. ReadAt and WriteAt do not move the offset used by
// Read, Write and Seek.
type File interface {
	io.Reader
	io.Writer
	io.ReaderAt
	io.WriterAt
	io.Seeker
	io.Closer
	// Name is the name the file was opened with.
	Name() string
	// Sync makes the file's data durable.
	Sync() error
	// Truncate changes the file's size, extending it with zeros.
	Truncate(size int64) error
	// Stat describes the file.
	Stat() (os.FileInfo, error)
}

// Mmapper is implemented by files that can be mapped read-only and shared.
// The caller unmaps with Munmap and must not touch the slice afterwards.
type Mmapper interface {
	Mmap(offset int64, length int) ([]byte, error)
}

// WritableMmapper is implemented by files that can be mapped shared for
// reading and writing: a store through the mapping lands in the page
// cache like a WriteAt, and the file's Sync makes it durable (Linux syncs
// a file's shared mappings with the file). The file must not shrink below
// the mapping while it exists: a store past the end faults. Fault
// injectors do not implement it, so their tests see every write.
type WritableMmapper interface {
	MmapWritable(offset int64, length int) ([]byte, error)
}

// Preallocator is implemented by files that can reserve disk space for
// their future size without writing it (fallocate). Preallocate extends the
// file's size to size (the new bytes read as zeros), so a reader of a
// preallocated file must find the end of its data itself.
type Preallocator interface {
	Preallocate(size int64) error
}

// ErrInjected is the default error of the fault injectors.
var ErrInjected = errors.New("vfs: injected fault")

// errClosed is returned by operations on a closed MemFS file.
var errClosed = errors.New("vfs: file already closed")

var errNoMmap = errors.New("vfs: file does not support mmap")
