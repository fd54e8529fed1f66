package consumequeue

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/internal/vfs"
)

const testDir = "/cq"

func testConfig(fs vfs.FS, per int) Config {
	c := DefaultConfig()
	c.Dir, c.FS, c.EntriesPerFile = testDir, fs, per
	return c
}

func openT(t *testing.T, fs vfs.FS, per int) *Store {
	t.Helper()
	s, err := Open(testConfig(fs, per))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func queueT(t *testing.T, s *Store, topic string, id int32) *Queue {
	t.Helper()
	q, err := s.Queue(topic, id)
	if err != nil {
		t.Fatalf("Queue(%q, %d): %v", topic, id, err)
	}
	return q
}

// entryAt is the entry the tests store at queue offset i: commit offsets
// grow by 100 per message, as a running sum of 100-byte records would.
func entryAt(i int64) Entry { return Entry{CommitOffset: i * 100, Size: 100, TagsCode: i ^ 0x5a} }

func fill(t *testing.T, q *Queue, from, to int64) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := q.Append(i, entryAt(i)); err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
	}
}

func wantRange(t *testing.T, q *Queue, min, max int64) {
	t.Helper()
	if got := q.MinOffset(); got != min {
		t.Errorf("MinOffset = %d, want %d", got, min)
	}
	if got := q.MaxOffset(); got != max {
		t.Errorf("MaxOffset = %d, want %d", got, max)
	}
	for i := min; i < max; i++ {
		got, err := q.Get(i)
		if err != nil || got != entryAt(i) {
			t.Fatalf("Get(%d) = %+v, %v; want %+v", i, got, err, entryAt(i))
		}
	}
}

func files(t *testing.T, fs vfs.FS, topic string, id int32) []string {
	t.Helper()
	names, err := fs.ReadDir(filepath.Join(testDir, topic, fmt.Sprint(id)))
	if err != nil {
		t.Fatalf("ReadDir: %v", err)
	}
	return names
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(*Config)
		nerrs int
	}{
		{"ok", func(*Config) {}, 0},
		{"no dir", func(c *Config) { c.Dir = "" }, 1},
		{"everything", func(c *Config) { c.Dir, c.FS, c.EntriesPerFile, c.Logger = "", nil, 0, nil }, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(vfs.NewMem(), 10)
			tt.mod(&c)
			err := c.Validate()
			var n int
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				n = len(j.Unwrap())
			}
			if n != tt.nerrs || (n > 0 && !errors.Is(err, ErrInvalidConfig)) {
				t.Errorf("Validate() = %v, want %d errors", err, tt.nerrs)
			}
		})
	}
}

func TestAppendGetRollReopen(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, fs, 4)
	q := queueT(t, s, "TopicA", 3)
	fill(t, q, 0, 10)
	wantRange(t, q, 0, 10)
	want := []string{"00000000000000000000", "00000000000000000080", "00000000000000000160"}
	if got := files(t, fs, "TopicA", 3); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files = %v, want %v", got, want)
	}
	if got := q.LastCommitOffset(); got != 900 {
		t.Errorf("LastCommitOffset = %d, want 900", got)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := q.Get(0); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	s2 := openT(t, fs, 4)
	q2, ok := s2.Lookup("TopicA", 3)
	if !ok {
		t.Fatal("queue not reloaded")
	}
	wantRange(t, q2, 0, 10)
	fill(t, q2, 10, 13)
	wantRange(t, q2, 0, 13)
}

func TestGetOutOfRange(t *testing.T) {
	s := openT(t, vfs.NewMem(), 4)
	q := queueT(t, s, "T", 0)
	fill(t, q, 0, 5)
	for _, off := range []int64{-1, 5, 100} {
		if _, err := q.Get(off); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Errorf("Get(%d) err = %v, want ErrOffsetOutOfRange", off, err)
		}
	}
}

func TestRead(t *testing.T) {
	s := openT(t, vfs.NewMem(), 4)
	q := queueT(t, s, "T", 0)
	fill(t, q, 0, 11)
	tests := []struct {
		off     int64
		max     int
		want    int
		wantErr error
	}{
		{0, 32, 11, nil},
		{3, 6, 6, nil}, // crosses two file boundaries
		{10, 5, 1, nil},
		{11, 5, 0, nil}, // at max: nothing new yet
		{12, 5, 0, ErrOffsetOutOfRange},
		{-1, 5, 0, ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		got, err := q.Read(tt.off, tt.max, nil)
		if !errors.Is(err, tt.wantErr) || len(got) != tt.want {
			t.Errorf("Read(%d,%d) = %d entries, %v; want %d, %v", tt.off, tt.max, len(got), err, tt.want, tt.wantErr)
			continue
		}
		for i, e := range got {
			if e != entryAt(tt.off+int64(i)) {
				t.Errorf("Read(%d,%d)[%d] = %+v, want %+v", tt.off, tt.max, i, e, entryAt(tt.off+int64(i)))
			}
		}
	}
}

func TestAppendIdempotent(t *testing.T) {
	s := openT(t, vfs.NewMem(), 4)
	q := queueT(t, s, "T", 0)
	fill(t, q, 0, 6)
	tests := []struct {
		name    string
		off     int64
		e       Entry
		wantErr error
	}{
		{"replay equal", 2, entryAt(2), nil},
		{"replay last", 5, entryAt(5), nil},
		{"gap", 7, entryAt(7), ErrGap},
		{"commit offset not increasing", 6, Entry{CommitOffset: 500, Size: 1}, ErrOutOfOrder},
		{"zero size", 6, Entry{CommitOffset: 600}, ErrInvalidEntry},
		{"negative commit offset", 6, Entry{CommitOffset: -1, Size: 1}, ErrInvalidEntry},
		{"next", 6, entryAt(6), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := q.Append(tt.off, tt.e); !errors.Is(err, tt.wantErr) {
				t.Errorf("Append(%d) = %v, want %v", tt.off, err, tt.wantErr)
			}
		})
	}
	wantRange(t, q, 0, 7)
}

func TestSetMinOffset(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, fs, 4)
	q := queueT(t, s, "T", 0)
	if err := q.Append(9, entryAt(9)); !errors.Is(err, ErrGap) {
		t.Fatalf("Append(9) on new queue = %v, want ErrGap", err)
	}
	if err := q.SetMinOffset(9); err != nil {
		t.Fatal(err)
	}
	fill(t, q, 9, 14)
	wantRange(t, q, 9, 14)
	if err := q.SetMinOffset(0); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("SetMinOffset on non-empty = %v, want ErrNotEmpty", err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	q2 := queueT(t, openT(t, fs, 4), "T", 0)
	wantRange(t, q2, 9, 14)
}

func TestTruncateCommitOffset(t *testing.T) {
	tests := []struct {
		name      string
		co        int64
		wantMax   int64
		wantFiles int
	}{
		{"nothing", 5000, 10, 3},
		{"inside last file", 900, 9, 3},
		{"at file boundary: the file at 8 stays, zeroed", 800, 8, 3},
		{"across boundary", 550, 6, 2},
		{"everything", 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := vfs.NewMem()
			s := openT(t, fs, 4)
			q := queueT(t, s, "T", 1)
			fill(t, q, 0, 10)
			if err := s.TruncateCommitOffset(tt.co); err != nil {
				t.Fatal(err)
			}
			wantRange(t, q, 0, tt.wantMax)
			if got := len(files(t, fs, "T", 1)); got != tt.wantFiles {
				t.Errorf("files = %d, want %d", got, tt.wantFiles)
			}
			fill(t, q, tt.wantMax, 12)
			s.Flush()
			s.Close()
			// The truncated entries must not come back after a restart.
			wantRange(t, queueT(t, openT(t, fs.CrashClone(), 4), "T", 1), 0, 12)
		})
	}
}

func TestTruncateIsDurable(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, fs, 4)
	q := queueT(t, s, "T", 1)
	fill(t, q, 0, 10)
	s.Flush()
	if err := s.TruncateCommitOffset(250); err != nil {
		t.Fatal(err)
	}
	wantRange(t, queueT(t, openT(t, fs.CrashClone(), 4), "T", 1), 0, 3)
}

func TestCorrectMinOffset(t *testing.T) {
	tests := []struct {
		name      string
		minCO     int64
		wantMin   int64
		wantFiles []string
	}{
		{"nothing", 0, 0, []string{"00000000000000000000", "00000000000000000080", "00000000000000000160"}},
		{"inside first file", 250, 3, []string{"00000000000000000000", "00000000000000000080", "00000000000000000160"}},
		{"first file gone", 400, 4, []string{"00000000000000000080", "00000000000000000160"}},
		{"two files gone", 850, 9, []string{"00000000000000000160"}},
		{"all entries below: last file kept", 99999, 10, []string{"00000000000000000160"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := vfs.NewMem()
			s := openT(t, fs, 4)
			q := queueT(t, s, "T", 0)
			fill(t, q, 0, 10)
			if err := s.CorrectMinOffset(tt.minCO); err != nil {
				t.Fatal(err)
			}
			wantRange(t, q, tt.wantMin, 10)
			if got := files(t, fs, "T", 0); fmt.Sprint(got) != fmt.Sprint(tt.wantFiles) {
				t.Errorf("files = %v, want %v", got, tt.wantFiles)
			}
			if err := q.Append(tt.wantMin-1, entryAt(0)); tt.wantMin > 0 && err != nil {
				t.Errorf("Append below min = %v, want nil (already applied)", err)
			}
		})
	}
}

func TestSearchByTimestamp(t *testing.T) {
	s := openT(t, vfs.NewMem(), 4)
	empty := queueT(t, s, "E", 0)
	q := queueT(t, s, "T", 0)
	fill(t, q, 0, 10)
	if err := s.CorrectMinOffset(200); err != nil { // min = 2
		t.Fatal(err)
	}
	// store time of entry i is 1000 + 10*i, with a run of equal times.
	storeTime := func(e Entry) (int64, error) {
		i := e.CommitOffset / 100
		if i >= 5 && i <= 7 {
			return 1050, nil
		}
		return 1000 + 10*i, nil
	}
	tests := []struct {
		ts   int64
		want int64
	}{
		{0, 2}, {1020, 2}, {1021, 3}, {1040, 4}, {1050, 5}, {1051, 8}, {1090, 9}, {1091, 10},
	}
	for _, tt := range tests {
		if got, err := q.SearchByTimestamp(tt.ts, storeTime); err != nil || got != tt.want {
			t.Errorf("SearchByTimestamp(%d) = %d, %v; want %d", tt.ts, got, err, tt.want)
		}
	}
	if got, err := empty.SearchByTimestamp(5, storeTime); err != nil || got != 0 {
		t.Errorf("empty SearchByTimestamp = %d, %v; want 0", got, err)
	}
	boom := errors.New("boom")
	if _, err := q.SearchByTimestamp(5, func(Entry) (int64, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Errorf("callback error = %v, want boom", err)
	}
}

func TestTornTail(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(f vfs.File) error
		wantMax int64
	}{
		{"partial entry", func(f vfs.File) error {
			_, err := f.WriteAt([]byte{0, 0, 0, 0, 0, 0, 3, 0x20, 0, 0}, 7*EntrySize)
			return err
		}, 7},
		{"short file", func(f vfs.File) error { return f.Truncate(6*EntrySize + 7) }, 6},
		{"commit offset goes back", func(f vfs.File) error {
			b := make([]byte, EntrySize)
			Entry{CommitOffset: 5, Size: 1}.encode(b)
			_, err := f.WriteAt(b, 7*EntrySize)
			return err
		}, 7},
		{"entry after a hole", func(f vfs.File) error {
			b := make([]byte, EntrySize)
			entryAt(9).encode(b)
			_, err := f.WriteAt(b, 9*EntrySize)
			return err
		}, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := vfs.NewMem()
			s := openT(t, fs, 16)
			fill(t, queueT(t, s, "T", 0), 0, 7)
			s.Close()
			f, err := fs.OpenFile(filepath.Join(testDir, "T", "0", fileName(0)), 2, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.corrupt(f); err != nil {
				t.Fatal(err)
			}
			f.Close()
			q := queueT(t, openT(t, fs, 16), "T", 0)
			wantRange(t, q, 0, tt.wantMax)
			// Appending up to past the old garbage must not revive it.
			fill(t, q, tt.wantMax, 12)
			wantRange(t, q, 0, 12)
		})
	}
}

func TestCrashAfterFlush(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, fs, 4)
	a, b := queueT(t, s, "A", 0), queueT(t, s, "B", 7)
	fill(t, a, 0, 9)
	fill(t, b, 0, 2)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	fill(t, a, 9, 15) // not flushed: may be lost
	crashed := openT(t, fs.CrashClone(), 4)
	if got := crashed.Queues(); fmt.Sprint(got) != "[{A 0} {B 7}]" {
		t.Fatalf("Queues = %v", got)
	}
	qa, _ := crashed.Lookup("A", 0)
	wantRange(t, qa, 0, 9)
	qb, _ := crashed.Lookup("B", 7)
	wantRange(t, qb, 0, 2)
	// Raft replays from before the flush; the replay is idempotent.
	fill(t, qa, 5, 15)
	wantRange(t, qa, 0, 15)
}

func TestFlushError(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.NewMem())
	s := openT(t, ffs, 4)
	fill(t, queueT(t, s, "T", 0), 0, 3)
	ffs.Inject(vfs.FailOnce(vfs.OpSync, "", nil))
	if err := s.Flush(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Flush = %v, want injected error", err)
	}
	ffs.Inject(nil)
	if err := s.Flush(); err != nil {
		t.Fatalf("Flush retry = %v", err)
	}
}

func TestStoreTopics(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, fs, 4)
	for _, bad := range []string{"", "../x", "a/b", "."} {
		if _, err := s.Queue(bad, 0); !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("Queue(%q) = %v, want ErrInvalidTopic", bad, err)
		}
	}
	fill(t, queueT(t, s, "A", 0), 0, 3)
	fill(t, queueT(t, s, "A", 1), 0, 3)
	fill(t, queueT(t, s, "%RETRY%g", 0), 0, 3)
	if got := fmt.Sprint(s.Queues()); got != "[{%RETRY%g 0} {A 0} {A 1}]" {
		t.Errorf("Queues = %s", got)
	}
	if err := s.DeleteTopic("A"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Lookup("A", 0); ok {
		t.Error("A/0 still there")
	}
	s.Flush()
	s.Close()
	if got := fmt.Sprint(openT(t, fs, 4).Queues()); got != "[{%RETRY%g 0}]" {
		t.Errorf("Queues after reopen = %s", got)
	}
}

func TestRebuild(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, fs, 4)
	fill(t, queueT(t, s, "Old", 0), 0, 3)
	type rec struct {
		topic string
		qid   int32
		off   int64
	}
	log := []rec{{"A", 0, 5}, {"B", 1, 0}, {"A", 0, 6}, {"B", 1, 1}, {"A", 0, 7}}
	err := Rebuild(s, func(yield func(string, int32, int64, Entry) error) error {
		for _, r := range log {
			if err := yield(r.topic, r.qid, r.off, entryAt(r.off)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.Queues()); got != "[{A 0} {B 1}]" {
		t.Errorf("Queues = %s", got)
	}
	a, _ := s.Lookup("A", 0)
	wantRange(t, a, 5, 8)
	b, _ := s.Lookup("B", 1)
	wantRange(t, b, 0, 2)
	bad := Rebuild(s, func(yield func(string, int32, int64, Entry) error) error {
		if err := yield("A", 0, 0, entryAt(0)); err != nil {
			return err
		}
		return yield("A", 0, 2, entryAt(2))
	})
	if !errors.Is(bad, ErrGap) {
		t.Errorf("Rebuild with a gap = %v, want ErrGap", bad)
	}
}

func TestDefaultGeometrySparse(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Dir = dir
	cfg.Logger = hclog.NewNullLogger()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	q := queueT(t, s, "T", 0)
	per := int64(DefaultEntriesPerFile)
	if err := q.SetMinOffset(per - 2); err != nil {
		t.Fatal(err)
	}
	fill(t, q, per-2, per+3)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	q2, _ := s2.Lookup("T", 0)
	wantRange(t, q2, per-2, per+3)
	names, _ := vfs.OS.ReadDir(filepath.Join(dir, "T", "0"))
	if want := "[00000000000000000000 00000000000006000000]"; fmt.Sprint(names) != want {
		t.Errorf("files = %v, want %s", names, want)
	}
	fi, err := vfs.OS.Stat(filepath.Join(dir, "T", "0", "00000000000006000000"))
	if err != nil || fi.Size() != per*EntrySize {
		t.Fatalf("file size = %v, %v; want %d", fi.Size(), err, per*EntrySize)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 >= per*EntrySize/2 {
		t.Errorf("file allocates %d bytes of %d: not sparse", st.Blocks*512, per*EntrySize)
	}
}

// TestConcurrentReaders reads while the FSM goroutine appends, rolls files
// and flushes; run with -race.
func TestConcurrentReaders(t *testing.T) {
	s := openT(t, vfs.NewMem(), 16)
	q := queueT(t, s, "T", 0)
	const n = 2000
	errc := make(chan error, 3)
	go func() {
		for i := int64(0); i < n; i++ {
			if err := q.Append(i, entryAt(i)); err != nil {
				errc <- err
				return
			}
			if i%100 == 0 {
				s.Flush()
			}
		}
		errc <- nil
	}()
	for range 2 {
		go func() {
			var dst []Entry
			for off := int64(0); off < n; {
				var err error
				if dst, err = q.Read(off, 32, dst[:0]); err != nil {
					errc <- err
					return
				}
				for i, e := range dst {
					if e != entryAt(off+int64(i)) {
						errc <- fmt.Errorf("offset %d: got %+v", off+int64(i), e)
						return
					}
				}
				if len(dst) == 0 {
					runtime.Gosched() // caught up with the writer
				}
				off += int64(len(dst))
			}
			errc <- nil
		}()
	}
	for range 3 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

func TestAppendBatch(t *testing.T) {
	// per 4: a batch of 10 from offset 2 spans three files.
	mem := vfs.NewMem()
	q := queueT(t, openT(t, mem, 4), "T", 0)
	fill(t, q, 0, 2)
	var es []Entry
	for i := int64(2); i < 12; i++ {
		es = append(es, entryAt(i))
	}
	if err := q.AppendBatch(2, es); err != nil {
		t.Fatalf("AppendBatch: %v", err)
	}
	wantRange(t, q, 0, 12)
	for i := int64(0); i < 12; i++ {
		if got, err := q.Get(i); err != nil || got != entryAt(i) {
			t.Fatalf("Get(%d) = %+v, %v; want %+v", i, got, err, entryAt(i))
		}
	}

	// The same entries appended one at a time give identical files.
	one := queueT(t, openT(t, vfs.NewMem(), 4), "T", 0)
	fill(t, one, 0, 12)
	for _, name := range []string{"00000000000000000000", "00000000000000000080", "00000000000000000160"} {
		a, b := readFileT(t, q, name), readFileT(t, one, name)
		if string(a) != string(b) {
			t.Errorf("file %s differs from per-entry appends", name)
		}
	}

	tests := []struct {
		name    string
		first   int64
		es      []Entry
		wantErr error
		wantMax int64
	}{
		{"replay only", 9, []Entry{entryAt(9), entryAt(10), entryAt(11)}, nil, 12},
		{"replay and extend", 10, []Entry{entryAt(10), entryAt(11), entryAt(12), entryAt(13)}, nil, 14},
		{"gap", 15, []Entry{entryAt(15)}, ErrGap, 14},
		{"out of order inside", 14, []Entry{entryAt(14), entryAt(14)}, ErrOutOfOrder, 14},
		{"invalid entry", 14, []Entry{entryAt(14), {}}, ErrInvalidEntry, 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := q.AppendBatch(tt.first, tt.es); !errors.Is(err, tt.wantErr) {
				t.Errorf("AppendBatch(%d) = %v, want %v", tt.first, err, tt.wantErr)
			}
			wantRange(t, q, 0, tt.wantMax)
		})
	}
}

// readFileT returns the bytes of one of q's files.
func readFileT(t *testing.T, q *Queue, name string) []byte {
	t.Helper()
	f, err := q.fs.OpenFile(filepath.Join(q.dir, name), 0, 0)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer f.Close()
	b := make([]byte, q.per*EntrySize)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return b
}

// TestReplayRepairsStaleEntries: an entry that disagrees with the entry
// being replayed (the log is the truth) was torn or left stale by a power
// loss; the queue is rewritten from it instead of failing, durably.
func TestReplayRepairsStaleEntries(t *testing.T) {
	mem := vfs.NewMem()
	s := openT(t, mem, 4)
	q := queueT(t, s, "T", 0)
	fill(t, q, 0, 10) // files at 0, 4 and 8
	stale := entryAt(5)
	stale.TagsCode++
	if err := q.Append(5, stale); err != nil {
		t.Fatalf("Append over a differing entry: %v", err)
	}
	if got, err := q.Get(5); err != nil || got != stale || q.MaxOffset() != 6 {
		t.Fatalf("after repair: Get(5) = %+v, %v; max %d", got, err, q.MaxOffset())
	}
	if names := files(t, mem, "T", 0); len(names) != 2 {
		t.Fatalf("files after repair: %v, want the two up to offset 6", names)
	}
	// In a batch: the replayed prefix matches, the rest is rewritten.
	if err := q.AppendBatch(4, []Entry{entryAt(4), entryAt(5), entryAt(6), entryAt(7), entryAt(8)}); err != nil {
		t.Fatalf("AppendBatch repairing offset 5: %v", err)
	}
	wantRange(t, q, 0, 9)

	// A torn entry on disk: offset 2's tags code half overwritten, still
	// a valid-looking entry, found by the replay after the restart.
	s.Close()
	f, err := mem.OpenFile(filepath.Join(testDir, "T", "0", "00000000000000000000"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef}, 2*EntrySize+16); err != nil {
		t.Fatal(err)
	}
	f.Close()
	q = queueT(t, openT(t, mem, 4), "T", 0)
	wantMaxAfterTear := q.MaxOffset()
	if got, _ := q.Get(2); got == entryAt(2) || wantMaxAfterTear != 9 {
		t.Fatalf("torn entry not in place for the test: Get(2) = %+v, max %d", got, wantMaxAfterTear)
	}
	for i := int64(0); i < 9; i++ {
		if err := q.Append(i, entryAt(i)); err != nil {
			t.Fatalf("replay Append(%d) after a torn entry: %v", i, err)
		}
	}
	wantRange(t, q, 0, 9)
}
