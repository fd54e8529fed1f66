package indexfile

import (
	"fmt"
	"os"
	"testing"

	"github.com/raftmq/raftmq/internal/vfs"
)

// benchStore is a store of RocketMQ's geometry on the OS file system.
func benchStoreFS(b *testing.B, fs vfs.FS) *Store {
	cfg := DefaultConfig()
	cfg.Dir, cfg.FS = b.TempDir(), fs
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkPut(b *testing.B) { benchPut(b, vfs.OS) }

// BenchmarkPutReadAt reads the slot with a pread instead of the mapping.
func BenchmarkPutReadAt(b *testing.B) { benchPut(b, noMmapFS{vfs.OS}) }

func benchPut(b *testing.B, fs vfs.FS) {
	s := benchStoreFS(b, fs)
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = Key("BenchTopic", fmt.Sprint("order-", i))
	}
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		if err := s.Put(keys[i%int64(len(keys))], i*200, t0+i); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkQuery looks up a key holding 10 entries among 100,000.
func BenchmarkQuery(b *testing.B) { benchQuery(b, vfs.OS) }

// BenchmarkQueryReadAt is BenchmarkQuery without mmap: every slot and
// entry read is a pread.
func BenchmarkQueryReadAt(b *testing.B) { benchQuery(b, noMmapFS{vfs.OS}) }

// noMmapFS hides the Mmapper of its files.
type noMmapFS struct{ vfs.FS }

func (fs noMmapFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := fs.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return struct{ vfs.File }{f}, nil
}

func benchQuery(b *testing.B, fs vfs.FS) {
	s := benchStoreFS(b, fs)
	const keys, n = 10_000, 100_000
	for i := int64(0); i < n; i++ {
		if err := s.Put(Key("BenchTopic", fmt.Sprint("order-", i%keys)), i*200, t0+i); err != nil {
			b.Fatal(err)
		}
	}
	names := make([]string, keys)
	for i := range names {
		names[i] = Key("BenchTopic", fmt.Sprint("order-", i))
	}
	b.ReportAllocs()
	var i int
	for b.Loop() {
		got, err := s.Query(names[i%keys], t0, t0+n, 32)
		if err != nil || len(got) != 10 {
			b.Fatal(err, len(got))
		}
		i++
	}
}
