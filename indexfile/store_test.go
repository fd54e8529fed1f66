package indexfile

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/raftmq/raftmq/internal/vfs"
)

// t0 is a store time in ms, on a second boundary.
var t0 = time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC).UnixMilli()

func testConfig(fs vfs.FS, slots, entries int) Config {
	c := DefaultConfig()
	c.Dir, c.FS, c.SlotNum, c.IndexNum = "/index", fs, slots, entries
	clock := time.UnixMilli(t0).UTC()
	c.Now = func() time.Time { return clock } // fixed: names must still differ
	return c
}

func openT(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(t *testing.T, s *Store, key string, co, ts int64) {
	t.Helper()
	if err := s.Put(key, co, ts); err != nil {
		t.Fatalf("Put(%q, %d): %v", key, co, err)
	}
}

func wantQuery(t *testing.T, s *Store, key string, begin, end int64, max int, want []int64) {
	t.Helper()
	got, err := s.Query(key, begin, end, max)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Query(%q, %d, %d, %d) = %v, %v; want %v", key, begin-t0, end-t0, max, got, err, want)
	}
}

func TestKeyHash(t *testing.T) {
	tests := []struct {
		key      string
		wantCode int32
		wantHash int32
	}{
		{"", 0, 0},
		{"abc", 96354, 96354},
		{"hello", 99162322, 99162322},
		{"\U0001F600", 1772899, 1772899},       // a surrogate pair, as Java sees it
		{"polygenelubricants", -1 << 31, 0},    // Integer.MIN_VALUE
		{"Aa", 2112, 2112}, {"BB", 2112, 2112}, // Java's classic collision
		{"zzzzzzzz", -1910022912, 1910022912}, // overflowed: abs
		{"TopicA#中文", -1902597621, 1902597621},
	}
	for _, tt := range tests {
		if got := javaHashCode(tt.key); got != tt.wantCode {
			t.Errorf("javaHashCode(%q) = %d, want %d", tt.key, got, tt.wantCode)
		}
		if got := keyHash(tt.key); got != tt.wantHash {
			t.Errorf("keyHash(%q) = %d, want %d", tt.key, got, tt.wantHash)
		}
	}
	if got := Key("TopicA", "order-1"); got != "TopicA#order-1" {
		t.Errorf("Key = %q", got)
	}
}

func TestConfigValidate(t *testing.T) {
	c := testConfig(vfs.NewMem(), 8, 8)
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate(good) = %v", err)
	}
	c.Dir, c.SlotNum, c.IndexNum, c.Now = "", 0, 1, nil
	err := c.Validate()
	if j, ok := err.(interface{ Unwrap() []error }); !ok || len(j.Unwrap()) != 4 || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Validate(bad) = %v, want 4 errors", err)
	}
}

func TestPutQuery(t *testing.T) {
	tests := []struct {
		name  string
		slots int
		os    bool
	}{
		{"many slots", 64, false},
		{"one slot: every key collides", 1, false},
		{"os file system: reads and writes through mmap", 64, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(vfs.NewMem(), tt.slots, 100)
			if tt.os {
				cfg.FS, cfg.Dir = vfs.OS, t.TempDir()
			}
			s := openT(t, cfg)
			put(t, s, "first", 1000, t0)
			if mapped := s.files[0].m != nil && s.files[0].writable; mapped != tt.os {
				t.Fatalf("mapped for writing = %v, want %v", mapped, tt.os)
			}
			for i := int64(0); i < 10; i++ {
				put(t, s, Key("T", fmt.Sprint("k", i%3)), i*100, t0+i*1000)
			}
			wantQuery(t, s, Key("T", "k0"), t0, t0+100_000, 10, []int64{900, 600, 300, 0})
			wantQuery(t, s, Key("T", "k1"), t0, t0+100_000, 10, []int64{700, 400, 100})
			wantQuery(t, s, Key("T", "k1"), t0, t0+100_000, 2, []int64{700, 400})
			wantQuery(t, s, Key("T", "missing"), t0, t0+100_000, 10, nil)
			wantQuery(t, s, Key("U", "k0"), t0, t0+100_000, 10, nil)
			if !tt.os {
				return
			}
			// What went through the mapping is in the file: a new store reads it.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openT(t, cfg)
			wantQuery(t, s, Key("T", "k1"), t0, t0+100_000, 10, []int64{700, 400, 100})
		})
	}
}

func TestHashCollisionIsReturned(t *testing.T) {
	s := openT(t, testConfig(vfs.NewMem(), 64, 100))
	put(t, s, "Aa", 1, t0)
	put(t, s, "BB", 2, t0)
	// Equal Java hash codes: the caller must verify the key on the message.
	wantQuery(t, s, "Aa", t0, t0, 10, []int64{2, 1})
}

func TestTimeRange(t *testing.T) {
	s := openT(t, testConfig(vfs.NewMem(), 16, 100))
	for i := int64(0); i < 6; i++ {
		put(t, s, "k", i, t0+i*10_000) // every 10 s
	}
	tests := []struct {
		name       string
		begin, end int64
		want       []int64
	}{
		{"all", t0, t0 + 50_000, []int64{5, 4, 3, 2, 1, 0}},
		{"middle", t0 + 10_000, t0 + 30_000, []int64{3, 2, 1}},
		{"end inclusive", t0, t0, []int64{0}},
		{"between entries", t0 + 1_000, t0 + 9_000, nil},
		{"same second", t0 + 20_500, t0 + 20_600, []int64{2}},
		{"after file", t0 + 60_000, t0 + 90_000, nil},
		{"before file", t0 - 9_000, t0 - 1_000, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantQuery(t, s, "k", tt.begin, tt.end, 10, tt.want) })
	}
}

func TestRollReopenAndDelete(t *testing.T) {
	fs := vfs.NewMem()
	cfg := testConfig(fs, 4, 4) // 3 usable entries per file
	s := openT(t, cfg)
	for i := int64(0); i < 8; i++ {
		put(t, s, "k", i*10, t0+i*1000)
	}
	wantNames := []string{"20261202130000000", "20261202130000001", "20261202130000002"}
	if got := s.Files(); !slices.Equal(got, wantNames) {
		t.Fatalf("Files = %v, want %v", got, wantNames)
	}
	all := []int64{70, 60, 50, 40, 30, 20, 10, 0}
	wantQuery(t, s, "k", t0, t0+10_000, 100, all)
	wantQuery(t, s, "k", t0, t0+10_000, 5, all[:5])
	wantQuery(t, s, "k", t0+3_000, t0+4_000, 100, []int64{40, 30}) // second file only
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, cfg)
	wantQuery(t, s2, "k", t0, t0+10_000, 100, all)
	put(t, s2, "k", 80, t0+8000)
	wantQuery(t, s2, "k", t0+7_000, t0+8_000, 100, []int64{80, 70})
	if got := s2.Files(); len(got) != 3 {
		t.Errorf("Files after put = %v, want the last file reused", got)
	}
	// The first file ends at commit offset 20, the second at 50.
	for _, tc := range []struct {
		min   int64
		files int
	}{{20, 3}, {21, 2}, {1000, 1}} {
		if err := s2.DeleteBefore(tc.min); err != nil {
			t.Fatal(err)
		}
		if got := len(s2.Files()); got != tc.files {
			t.Errorf("DeleteBefore(%d): %d files, want %d", tc.min, got, tc.files)
		}
	}
	wantQuery(t, s2, "k", t0, t0+10_000, 100, []int64{80, 70, 60})
	s2.Close()
	if names, _ := fs.ReadDir("/index"); !slices.Equal(names, wantNames[2:]) {
		t.Errorf("dir = %v, want %v", names, wantNames[2:])
	}
}

func TestCrashAfterFlush(t *testing.T) {
	fs := vfs.NewMem()
	cfg := testConfig(fs, 8, 100)
	s := openT(t, cfg)
	for i := int64(0); i < 5; i++ {
		put(t, s, "k", i, t0+i*1000)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	put(t, s, "k", 5, t0+5000) // not flushed
	cfg.FS = fs.CrashClone()
	c := openT(t, cfg)
	wantQuery(t, c, "k", t0, t0+10_000, 100, []int64{4, 3, 2, 1, 0})
	put(t, c, "k", 5, t0+5000) // the replay
	wantQuery(t, c, "k", t0, t0+10_000, 100, []int64{5, 4, 3, 2, 1, 0})
}

// TestCrashWithStaleHeader loses the header write of a flush whose entries
// were synced: slots then point past indexCount and must be repaired.
func TestCrashWithStaleHeader(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	cfg := testConfig(ffs, 2, 100)
	s := openT(t, cfg)
	put(t, s, "a", 1, t0)
	put(t, s, "b", 2, t0+1000)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	put(t, s, "a", 3, t0+2000)
	put(t, s, "c", 4, t0+3000)
	ffs.Inject(vfs.FailOnce(vfs.OpWrite, "", nil)) // the header write
	if err := s.Flush(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Flush = %v, want injected fault", err)
	}
	cfg.FS = mem.CrashClone()
	c := openT(t, cfg)
	wantQuery(t, c, "a", t0, t0+10_000, 100, []int64{1})
	wantQuery(t, c, "b", t0, t0+10_000, 100, []int64{2})
	put(t, c, "a", 3, t0+2000)
	put(t, c, "c", 4, t0+3000)
	wantQuery(t, c, "a", t0, t0+10_000, 100, []int64{3, 1})
	wantQuery(t, c, "c", t0, t0+10_000, 100, []int64{4})
}

func TestClosed(t *testing.T) {
	s := openT(t, testConfig(vfs.NewMem(), 8, 8))
	s.Close()
	if err := s.Put("k", 1, t0); !errors.Is(err, ErrClosed) {
		t.Errorf("Put after Close = %v", err)
	}
	if _, err := s.Query("k", 0, t0, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Query after Close = %v", err)
	}
}

func TestGeometryMismatch(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, testConfig(fs, 8, 8))
	put(t, s, "k", 1, t0)
	s.Close()
	if _, err := Open(testConfig(fs, 4, 8)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open with other geometry = %v, want ErrCorrupt", err)
	}
}

// TestDefaultGeometrySparse uses RocketMQ's 420 MB file on the real file
// system; it is fast only because the file is sparse.
func TestDefaultGeometrySparse(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	start := time.Now()
	s := openT(t, cfg)
	for i := int64(0); i < 1000; i++ {
		put(t, s, Key("T", fmt.Sprint("k", i%10)), i, t0+i)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, cfg)
	got, err := s2.Query(Key("T", "k7"), t0, t0+1000, 3)
	if err != nil || !slices.Equal(got, []int64{997, 987, 977}) {
		t.Errorf("Query = %v, %v", got, err)
	}
	names := s2.Files()
	fi, err := vfs.OS.Stat(cfg.Dir + "/" + names[0])
	if err != nil || fi.Size() != 420_000_040 {
		t.Fatalf("size = %v, %v; want 420000040", fi.Size(), err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 > 4<<20 {
		t.Errorf("file allocates %d bytes: not sparse", st.Blocks*512)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}
