package commitlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/vfs"
)

// fakeSpan reads what the dledger package would know: command entries carry
// [commit offset:8][message bytes...].
func fakeSpan(l *raft.Log) (int64, int, int, bool) {
	if l.Type != raft.LogCommand || len(l.Data) <= 8 {
		return 0, 0, 0, false
	}
	return int64(binary.LittleEndian.Uint64(l.Data)), 8, len(l.Data) - 8, true
}

type message struct {
	co    int64
	data  []byte
	index uint64
}

// messageLog builds entries 1..n: every third a no-op, the others holding
// 1-5 messages, commit offsets starting at startCO.
func messageEntries(n int, startCO int64) ([]*raft.Log, []message) {
	rng := rand.New(rand.NewSource(1))
	var logs []*raft.Log
	var msgs []message
	co := startCO
	for i := 1; i <= n; i++ {
		l := &raft.Log{Index: uint64(i), Term: 1, Type: raft.LogNoop}
		if i%3 != 1 {
			l.Type = raft.LogCommand
			l.Data = binary.LittleEndian.AppendUint64(nil, uint64(co))
			for k := 0; k < 1+rng.Intn(5); k++ {
				m := make([]byte, 20+rng.Intn(200))
				rng.Read(m)
				msgs = append(msgs, message{co: co, data: m, index: uint64(i)})
				l.Data = append(l.Data, m...)
				co += int64(len(m))
			}
		}
		logs = append(logs, l)
	}
	return logs, msgs
}

func msgConfig(fsys vfs.FS, dir string) Config {
	c := testConfig(fsys, dir)
	c.Span = fakeSpan
	return c
}

func TestReadMessage(t *testing.T) {
	tests := []struct {
		name    string
		fs      func(t *testing.T) (vfs.FS, string)
		useMmap bool
	}{
		{"memfs pread", func(*testing.T) (vfs.FS, string) { return vfs.NewMem(), testDir }, false},
		{"os pread", func(t *testing.T) (vfs.FS, string) { return vfs.OS, t.TempDir() }, false},
		{"os mmap", func(t *testing.T) (vfs.FS, string) { return vfs.OS, t.TempDir() }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, dir := tt.fs(t)
			cfg := msgConfig(fsys, dir)
			l := mustOpen(t, cfg)
			l.useMmap = tt.useMmap
			logs, msgs := messageEntries(150, 1000)
			for i := 0; i < len(logs); i += 5 {
				if err := l.StoreLogs(logs[i:min(i+5, len(logs))]); err != nil {
					t.Fatal(err)
				}
			}
			if len(l.segs) < 3 {
				t.Fatalf("want several segments, got %d", len(l.segs))
			}
			checkMessages(t, l, msgs)
			closeLog(t, l)
			l = mustOpen(t, cfg)
			l.useMmap = tt.useMmap
			defer closeLog(t, l)
			checkMessages(t, l, msgs)
		})
	}
}

func checkMessages(t *testing.T, l *Log, msgs []message) {
	t.Helper()
	last := msgs[len(msgs)-1]
	end := last.co + int64(len(last.data))
	if got := l.MaxCommitOffset(); got != end {
		t.Fatalf("MaxCommitOffset = %d, want %d", got, end)
	}
	if got, err := l.MinCommitOffset(); err != nil || got != msgs[0].co {
		t.Fatalf("MinCommitOffset = %d, %v; want %d", got, err, msgs[0].co)
	}
	read := func(m message) {
		got, err := l.ReadMessage([]byte("pre"), m.co, len(m.data))
		if err != nil {
			t.Fatalf("ReadMessage(%d): %v", m.co, err)
		}
		if !bytes.Equal(got, append([]byte("pre"), m.data...)) {
			t.Fatalf("ReadMessage(%d) returned wrong bytes", m.co)
		}
		if idx, err := l.EntryForCommitOffset(m.co + 1); err != nil || idx != m.index {
			t.Fatalf("EntryForCommitOffset(%d) = %d, %v; want %d", m.co+1, idx, err, m.index)
		}
	}
	for _, m := range msgs { // sequential: the cached path
		read(m)
	}
	for _, i := range rand.New(rand.NewSource(2)).Perm(len(msgs)) { // random: the search path
		read(msgs[i])
	}
	firstOfLast := msgs[len(msgs)-1]
	for _, m := range msgs {
		if m.index == last.index {
			firstOfLast = m
			break
		}
	}
	bad := []struct {
		name    string
		co      int64
		size    int
		wantErr error
	}{
		{"before first", msgs[0].co - 1, 1, ErrOffsetNotFound},
		{"at end", end, 1, ErrOffsetNotFound},
		{"past end", end + 100, 1, ErrOffsetNotFound},
		{"spans two entries", firstOfLast.co - 1, 2, ErrOffsetNotFound},
		{"zero size", msgs[0].co, 0, ErrOffsetNotFound},
	}
	for _, b := range bad {
		if _, err := l.ReadMessage(nil, b.co, b.size); !errors.Is(err, b.wantErr) {
			t.Fatalf("%s: ReadMessage = %v, want %v", b.name, err, b.wantErr)
		}
	}
	if _, err := l.EntryForCommitOffset(end); !errors.Is(err, ErrOffsetNotFound) {
		t.Fatalf("EntryForCommitOffset(end) = %v", err)
	}
	checkReadMessages(t, l, msgs, end)
}

// checkReadMessages reads every other message in batches, across entries
// and segments (the active one included), and a batch that runs past the
// end stops with the span before it read.
func checkReadMessages(t *testing.T, l *Log, msgs []message, end int64) {
	t.Helper()
	var spans []Span
	var want []byte
	for i := 0; i < len(msgs); i += 2 {
		spans = append(spans, Span{msgs[i].co, int32(len(msgs[i].data))})
		want = append(want, msgs[i].data...)
	}
	got, n, err := l.ReadMessages(nil, spans)
	if err != nil || n != len(spans) || !bytes.Equal(got, want) {
		t.Fatalf("ReadMessages of %d spans = %d read, %v, equal %v", len(spans), n, err, bytes.Equal(got, want))
	}
	tail := msgs[len(msgs)-1]
	got, n, err = l.ReadMessages([]byte("pre"), []Span{{tail.co, int32(len(tail.data))}, {end, 1}})
	if !errors.Is(err, ErrOffsetNotFound) || n != 1 || !bytes.Equal(got, append([]byte("pre"), tail.data...)) {
		t.Fatalf("ReadMessages past the end = %d read, %v", n, err)
	}
}

func TestMessagesAfterTruncateAndCrash(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, msgConfig(fsys, testDir))
	defer closeLog(t, l)
	logs, msgs := messageEntries(90, 0)
	if err := l.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteRange(61, 90); err != nil {
		t.Fatal(err)
	}
	var kept []message
	for _, m := range msgs {
		if m.index <= 60 {
			kept = append(kept, m)
		}
	}
	checkMessages(t, l, kept)
	gone := msgs[len(kept)]
	if _, err := l.ReadMessage(nil, gone.co, len(gone.data)); !errors.Is(err, ErrOffsetNotFound) {
		t.Fatalf("ReadMessage of truncated entry = %v", err)
	}
	// Re-append the same entries: commit offsets continue from the new end.
	if err := l.StoreLogs(logs[60:]); err != nil {
		t.Fatal(err)
	}
	// A crash rebuilds the spans from the segments by calling Span again.
	c := mustOpen(t, msgConfig(fsys.CrashClone(), testDir))
	defer closeLog(t, c)
	checkMessages(t, c, msgs)
}

func TestCommitOffsetMustNotDecrease(t *testing.T) {
	l := mustOpen(t, msgConfig(vfs.NewMem(), testDir))
	defer closeLog(t, l)
	logs, _ := messageEntries(3, 500)
	if err := l.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	back := &raft.Log{Index: 4, Type: raft.LogCommand, Data: binary.LittleEndian.AppendUint64(nil, 10)}
	back.Data = append(back.Data, "msg"...)
	if err := l.StoreLog(back); !errors.Is(err, ErrCommitOffset) {
		t.Fatalf("StoreLog with decreasing commit offset = %v, want ErrCommitOffset", err)
	}
	if last, _ := l.LastIndex(); last != 3 {
		t.Fatalf("last = %d after a refused batch, want 3", last)
	}
}

func TestReadMessageNeverServesCorruptBytes(t *testing.T) {
	for _, useMmap := range []bool{false, true} {
		dir := t.TempDir()
		cfg := msgConfig(vfs.OS, dir)
		l := mustOpen(t, cfg)
		logs, msgs := messageEntries(100, 0)
		if err := l.StoreLogs(logs[:50]); err != nil {
			t.Fatal(err)
		}
		if err := l.StoreLogs(logs[50:]); err != nil {
			t.Fatal(err)
		}
		m := msgs[3]
		e, err := l.entryAt(m.index)
		if err != nil {
			t.Fatal(err)
		}
		name := l.segFor(m.index).f.Name()
		closeLog(t, l)
		l = mustOpen(t, cfg)
		l.useMmap = useMmap
		// Damage while open: Open itself would find it and cut the log.
		flipBit(t, vfs.OS, name, e.pos+int64(e.msgOff)+(m.co-e.commitOf))
		if _, err := l.ReadMessage(nil, m.co, len(m.data)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("mmap=%v: ReadMessage of corrupt entry = %v, want ErrCorrupt", useMmap, err)
		}
		closeLog(t, l)
	}
}

// TestReadActiveSegmentThroughMapping: the active segment is mapped on
// its first read, to the full segment size, and later appends are read
// through the same mapping.
func TestReadActiveSegmentThroughMapping(t *testing.T) {
	cfg := msgConfig(vfs.OS, t.TempDir())
	cfg.SegmentSize = 1 << 20
	l := mustOpen(t, cfg)
	defer closeLog(t, l)
	logs, msgs := messageEntries(60, 0)
	if err := l.StoreLogs(logs[:30]); err != nil {
		t.Fatal(err)
	}
	first := msgs[0]
	if got, err := l.ReadMessage(nil, first.co, len(first.data)); err != nil || !bytes.Equal(got, first.data) {
		t.Fatalf("first read: %v", err)
	}
	act := l.active()
	if act.sealed || act.mm == nil || int64(len(act.mm)) != cfg.SegmentSize {
		t.Fatalf("active segment mapping: sealed %v, %d bytes mapped, want %d", act.sealed, len(act.mm), cfg.SegmentSize)
	}
	mapped := &act.mm[0]
	if err := l.StoreLogs(logs[30:]); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if got, err := l.ReadMessage(nil, m.co, len(m.data)); err != nil || !bytes.Equal(got, m.data) {
			t.Fatalf("ReadMessage(%d) after appends: %v", m.co, err)
		}
	}
	if l.active() != act || &act.mm[0] != mapped {
		t.Fatal("appends replaced the active segment's mapping")
	}
}
