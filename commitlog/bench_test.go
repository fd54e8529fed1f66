package commitlog

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

const benchEntrySize = 1 << 10

var benchBatches = []int{1, 16, 64, 256}

func benchConfig(b *testing.B) Config {
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	cfg.SegmentSize = 256 << 20
	cfg.Retention.CheckInterval = 0
	return cfg
}

// BenchmarkStoreLogs measures SyncFlush StoreLogs on the real disk: one
// write and one fsync per batch of 1 KiB entries.
func BenchmarkStoreLogs(b *testing.B) {
	for _, n := range benchBatches {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			l, err := Open(benchConfig(b))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			batch := make([]*raft.Log, n)
			for i := range batch {
				batch[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: make([]byte, benchEntrySize)}
			}
			next := uint64(1)
			b.SetBytes(int64(n * benchEntrySize))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for _, lg := range batch {
					lg.Index = next
					next++
				}
				if err := l.StoreLogs(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRawWriteFsync is the baseline: the same framed bytes per op
// appended to a plain os.File with one write and one fsync.
func BenchmarkRawWriteFsync(b *testing.B) {
	for _, n := range benchBatches {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, n*(benchEntrySize+recordHeaderSize))
			b.SetBytes(int64(n * benchEntrySize))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadMessage reads 1 KiB messages (64 per entry) from sealed
// segments in commit offset order, through pread and through mmap.
func BenchmarkReadMessage(b *testing.B) {
	const perEntry, entries = 64, 600
	cfg := benchConfig(b)
	cfg.SegmentSize = 4 << 20
	cfg.Span = fakeSpan
	l, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	co := int64(0)
	for i := 1; i <= entries; i++ {
		data := binary.LittleEndian.AppendUint64(nil, uint64(co))
		data = append(data, make([]byte, perEntry*benchEntrySize)...)
		if err := l.StoreLog(&raft.Log{Index: uint64(i), Term: 1, Type: raft.LogCommand, Data: data}); err != nil {
			b.Fatal(err)
		}
		co += perEntry * benchEntrySize
	}
	sealedEnd := l.active().startCO
	for _, mode := range []struct {
		name string
		mmap bool
	}{{"pread", false}, {"mmap", true}} {
		for _, pattern := range []string{"sequential", "random"} {
			b.Run(mode.name+"/"+pattern, func(b *testing.B) {
				l.useMmap = mode.mmap
				l.cache.Store(nil)
				dst := make([]byte, 0, benchEntrySize)
				off, step := int64(0), int64(benchEntrySize)
				if pattern == "random" {
					step = 7919 * benchEntrySize // prime stride: a different entry every read
				}
				b.SetBytes(benchEntrySize)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					var err error
					if dst, err = l.ReadMessage(dst[:0], off, benchEntrySize); err != nil {
						b.Fatal(err)
					}
					off = (off + step) % sealedEnd
				}
			})
		}
	}
}
