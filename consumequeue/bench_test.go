package consumequeue

import (
	"testing"

	"github.com/raftmq/raftmq/internal/vfs"
)

// benchQueue returns a queue on the OS file system holding n entries.
func benchQueue(b *testing.B, n int64) (*Store, *Queue) {
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	q, err := s.Queue("Bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	for i := int64(0); i < n; i++ {
		if err := q.Append(i, entryAt(i)); err != nil {
			b.Fatal(err)
		}
	}
	return s, q
}

func BenchmarkAppend(b *testing.B) {
	_, q := benchQueue(b, 0)
	b.ReportAllocs()
	b.SetBytes(EntrySize)
	var i int64
	for b.Loop() {
		if err := q.Append(i, entryAt(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAppendBatch32 appends runs of 32 entries, as the FSM does for
// a queue's messages of one raft entry; ns/op is per entry.
func BenchmarkAppendBatch32(b *testing.B) {
	_, q := benchQueue(b, 0)
	b.ReportAllocs()
	b.SetBytes(EntrySize)
	es := make([]Entry, 32)
	var next int64
	for b.Loop() {
		if len(es) == 32 {
			es = es[:0]
		}
		es = append(es, entryAt(next+int64(len(es))))
		if len(es) < 32 {
			continue
		}
		if err := q.AppendBatch(next, es); err != nil {
			b.Fatal(err)
		}
		next += 32
	}
}

func BenchmarkQueueGet(b *testing.B) {
	const n = 10_000
	_, q := benchQueue(b, n)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		if _, err := q.Get(i % n); err != nil {
			b.Fatal(err)
		}
		i += 7
	}
}

func BenchmarkQueueRead32(b *testing.B) {
	const n = 10_000
	_, q := benchQueue(b, n)
	dst := make([]Entry, 0, 32)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		var err error
		if dst, err = q.Read(i%(n-32), 32, dst[:0]); err != nil || len(dst) != 32 {
			b.Fatal(err, len(dst))
		}
		i += 32
	}
}

// BenchmarkAppendMem isolates the package's own cost from the kernel's.
func BenchmarkAppendMem(b *testing.B) {
	s, err := Open(testConfig(vfs.NewMem(), 1<<16))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	q, _ := s.Queue("Bench", 0)
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		if err := q.Append(i, entryAt(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
