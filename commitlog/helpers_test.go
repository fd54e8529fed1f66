package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/goleak"

	"github.com/raftmq/raftmq/internal/vfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testDir = "/log"

// testConfig is a small-segment config on fsys with retention checks off.
func testConfig(fsys vfs.FS, dir string) Config {
	c := DefaultConfig()
	c.Dir, c.FS, c.SegmentSize = dir, fsys, minSegmentSize
	c.Retention.CheckInterval = 0
	c.Retention.DiskUsage = func(string) (float64, error) { return 0.1, nil }
	return c
}

func mustOpen(t testing.TB, cfg Config) *Log {
	t.Helper()
	l, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func closeLog(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// entryAt builds a deterministic entry for index i.
func makeEntry(i uint64) *raft.Log {
	return &raft.Log{
		Index:      i,
		Term:       1 + i/7,
		Type:       raft.LogType(i % 6),
		Data:       bytes.Repeat([]byte{byte(i)}, int(50+i%200)),
		Extensions: []byte(fmt.Sprintf("ext-%d", i)),
		AppendedAt: time.Unix(1_700_000_000, int64(i)),
	}
}

func makeRange(from, to uint64) []*raft.Log {
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, makeEntry(i))
	}
	return logs
}

// storeRange stores [from, to] in batches of batch entries.
func storeRange(t testing.TB, l *Log, from, to uint64, batch int) {
	t.Helper()
	logs := makeRange(from, to)
	for len(logs) > 0 {
		n := min(batch, len(logs))
		if err := l.StoreLogs(logs[:n]); err != nil {
			t.Fatalf("StoreLogs %d..: %v", logs[0].Index, err)
		}
		logs = logs[n:]
	}
}

func sameLog(got, want *raft.Log) error {
	if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type ||
		!bytes.Equal(got.Data, want.Data) || !bytes.Equal(got.Extensions, want.Extensions) ||
		!got.AppendedAt.Equal(want.AppendedAt) {
		return fmt.Errorf("got %+v, want %+v", got, want)
	}
	return nil
}

// checkRange asserts FirstIndex, LastIndex and the content of [first, last],
// with ErrLogNotFound just outside.
func checkRange(t testing.TB, l *Log, first, last uint64) {
	t.Helper()
	gotFirst, err1 := l.FirstIndex()
	gotLast, err2 := l.LastIndex()
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if gotFirst != first || gotLast != last {
		t.Fatalf("first, last = %d, %d; want %d, %d", gotFirst, gotLast, first, last)
	}
	if last == 0 {
		return
	}
	for i := first; i <= last; i++ {
		var got raft.Log
		if err := l.GetLog(i, &got); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if err := sameLog(&got, makeEntry(i)); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
	}
	for _, i := range []uint64{first - 1, last + 1} {
		var got raft.Log
		if err := l.GetLog(i, &got); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("GetLog(%d) = %v, want ErrLogNotFound", i, err)
		}
	}
}

// segmentFiles lists the segment file names in dir.
func segmentBases(t testing.TB, fsys vfs.FS, dir string) []uint64 {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []uint64
	for _, n := range names {
		if b, ok := parseSegmentName(n); ok {
			bases = append(bases, b)
		}
	}
	return bases
}
