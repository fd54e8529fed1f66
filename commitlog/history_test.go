package commitlog

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/vfs"
)

// readHistory reads the whole stream of l's records through index
// through, checking its announced size.
func readHistory(t *testing.T, l *Log, through uint64) (first, last uint64, b []byte) {
	t.Helper()
	h, err := l.History(through)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	b, err = io.ReadAll(h)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != h.Size {
		t.Fatalf("history of %d bytes announced %d", len(b), h.Size)
	}
	return h.First, h.Last, b
}

func TestHistoryImportedIsTheLog(t *testing.T) {
	src := mustOpen(t, testConfig(vfs.NewMem(), testDir))
	defer closeLog(t, src)
	storeRange(t, src, 1, 300, 7)
	first, last, b := readHistory(t, src, 250)
	if first != 1 || last != 250 {
		t.Fatalf("history [%d, %d], want [1, 250]", first, last)
	}
	fsys := vfs.NewMem()
	dst := mustOpen(t, testConfig(fsys, testDir))
	var seen []uint64
	err := dst.ImportHistory(bytes.NewReader(b), first, last, func(e *raft.Log) error {
		seen = append(seen, e.Index)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 250 || seen[0] != 1 || seen[249] != 250 {
		t.Fatalf("visited %d entries (%v..)", len(seen), seen[:min(len(seen), 3)])
	}
	if !dst.HistoryPending() {
		t.Fatal("no pending mark after an import")
	}
	if err := dst.DeleteRange(1, 250); err != nil { // raft's reset after the install
		t.Fatal(err)
	}
	checkRange(t, dst, 1, 250)
	storeRange(t, dst, 251, 260, 3)
	if err := dst.HistoryDerived(); err != nil {
		t.Fatal(err)
	}
	closeLog(t, dst)
	dst = mustOpen(t, testConfig(fsys, testDir))
	defer closeLog(t, dst)
	checkRange(t, dst, 1, 260)
	if dst.HistoryPending() {
		t.Fatal("pending mark survived HistoryDerived")
	}
	if err := dst.DeleteRange(1, 260); err != nil { // a later reset is honoured
		t.Fatal(err)
	}
	checkRange(t, dst, 0, 0)
}

func TestImportHistoryRefusesBadStreams(t *testing.T) {
	src := mustOpen(t, testConfig(vfs.NewMem(), testDir))
	defer closeLog(t, src)
	storeRange(t, src, 1, 40, 5)
	_, _, b := readHistory(t, src, 40)
	flipped := bytes.Clone(b)
	flipped[len(flipped)/2] ^= 0x10
	cases := []struct {
		name        string
		stream      []byte
		first, last uint64
	}{
		{"flipped bit", flipped, 1, 40},
		{"short", b[:len(b)-3], 1, 40},
		{"claims more", b, 1, 41},
		{"claims fewer", b, 1, 39},
		{"wrong first", b, 2, 41},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := mustOpen(t, testConfig(vfs.NewMem(), testDir))
			defer closeLog(t, dst)
			err := dst.ImportHistory(bytes.NewReader(tc.stream), tc.first, tc.last, nil)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("import = %v, want ErrCorrupt", err)
			}
			if dst.holdThrough.Load() != 0 {
				t.Fatal("a failed import holds the log against raft's reset")
			}
		})
	}
	t.Run("log not empty", func(t *testing.T) {
		dst := mustOpen(t, testConfig(vfs.NewMem(), testDir))
		defer closeLog(t, dst)
		storeRange(t, dst, 1, 2, 1)
		if err := dst.ImportHistory(bytes.NewReader(b), 1, 40, nil); err == nil {
			t.Fatal("imported into a log holding entries")
		}
		checkRange(t, dst, 1, 2)
	})
}

func TestOpenHistoryPinsRetention(t *testing.T) {
	cfg := testConfig(vfs.NewMem(), testDir)
	cfg.Retention.Floor = func() uint64 { return ^uint64(0) }
	cfg.Retention.DiskUsage = func(string) (float64, error) { return 0.89, nil }
	l := mustOpen(t, cfg)
	defer closeLog(t, l)
	storeRange(t, l, 1, 100, 4)
	h, err := l.History(100)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.RunRetentionOnce(at(1000*time.Hour, 4)); n != 0 || err != nil {
		t.Fatalf("retention deleted %d segments (%v) under an open history", n, err)
	}
	b, err := io.ReadAll(h)
	if err != nil || int64(len(b)) != h.Size {
		t.Fatalf("read %d of %d bytes: %v", len(b), h.Size, err)
	}
	h.Close()
	h.Close() // idempotent
	if n, err := l.RunRetentionOnce(at(1000*time.Hour, 4)); n == 0 || err != nil {
		t.Fatalf("retention deleted %d segments (%v) once the history closed", n, err)
	}
}
