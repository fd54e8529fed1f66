package commitlog

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/vfs"
)

func TestEmptyLog(t *testing.T) {
	l := mustOpen(t, testConfig(vfs.NewMem(), testDir))
	defer closeLog(t, l)
	checkRange(t, l, 0, 0)
	var got raft.Log
	if err := l.GetLog(1, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog on empty log = %v, want ErrLogNotFound", err)
	}
	if !l.IsMonotonic() {
		t.Fatal("IsMonotonic() = false")
	}
}

func TestRoundTripEveryLogType(t *testing.T) {
	tests := []struct {
		name string
		log  raft.Log
	}{
		{"command", raft.Log{Type: raft.LogCommand, Term: 3, Data: []byte("put"), Extensions: []byte("x")}},
		{"noop", raft.Log{Type: raft.LogNoop, Term: 3}},
		{"add peer", raft.Log{Type: raft.LogAddPeerDeprecated, Term: 4, Data: []byte("peer")}},
		{"remove peer", raft.Log{Type: raft.LogRemovePeerDeprecated, Term: 4, Data: []byte("peer")}},
		{"barrier", raft.Log{Type: raft.LogBarrier, Term: 5}},
		{"configuration", raft.Log{Type: raft.LogConfiguration, Term: 6, Data: make([]byte, 3000)}},
		{"extensions only", raft.Log{Type: raft.LogCommand, Term: 7, Extensions: []byte("chunk")}},
		{"appended at", raft.Log{Type: raft.LogCommand, Term: 7, AppendedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}},
		{"max term", raft.Log{Type: raft.LogCommand, Term: ^uint64(0), Data: []byte{0}}},
	}
	fsys := vfs.NewMem()
	cfg := testConfig(fsys, testDir)
	l := mustOpen(t, cfg)
	for i := range tests {
		tests[i].log.Index = uint64(i + 1)
		if err := l.StoreLog(&tests[i].log); err != nil {
			t.Fatalf("%s: StoreLog: %v", tests[i].name, err)
		}
	}
	check := func(l *Log) {
		for _, tt := range tests {
			var got raft.Log
			if err := l.GetLog(tt.log.Index, &got); err != nil {
				t.Fatalf("%s: GetLog: %v", tt.name, err)
			}
			if err := sameLog(&got, &tt.log); err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
		}
	}
	check(l)
	closeLog(t, l)
	l = mustOpen(t, cfg)
	defer closeLog(t, l)
	check(l)
}

func TestStoreLogsContiguity(t *testing.T) {
	tests := []struct {
		name    string
		stored  [2]uint64 // range stored first; {0,0} none
		batch   []uint64
		wantErr error
	}{
		{"empty log takes any first index", [2]uint64{}, []uint64{1000, 1001}, nil},
		{"continues at last+1", [2]uint64{1, 5}, []uint64{6, 7}, nil},
		{"gap after last", [2]uint64{1, 5}, []uint64{7}, ErrNonContiguous},
		{"overlap", [2]uint64{1, 5}, []uint64{5}, ErrNonContiguous},
		{"gap inside batch", [2]uint64{1, 5}, []uint64{6, 8}, ErrNonContiguous},
		{"index zero", [2]uint64{}, []uint64{0}, ErrNonContiguous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustOpen(t, testConfig(vfs.NewMem(), testDir))
			defer closeLog(t, l)
			if tt.stored[1] != 0 {
				storeRange(t, l, tt.stored[0], tt.stored[1], 3)
			}
			var batch []*raft.Log
			for _, i := range tt.batch {
				batch = append(batch, makeEntry(i))
			}
			if err := l.StoreLogs(batch); !errors.Is(err, tt.wantErr) {
				t.Fatalf("StoreLogs = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				checkRange(t, l, tt.stored[0], tt.stored[1])
				return
			}
			first := tt.stored[0]
			if first == 0 {
				first = tt.batch[0]
			}
			checkRange(t, l, first, tt.batch[len(tt.batch)-1])
		})
	}
}

func TestDeleteRange(t *testing.T) {
	tests := []struct {
		name             string
		min, max         uint64
		wantErr          error
		wantFirst, wantL uint64
	}{
		{"suffix", 70, 200, nil, 1, 69},
		{"suffix at a segment start", 0, 0, nil, 0, 0}, // filled in below
		{"suffix from last", 200, 200, nil, 1, 199},
		{"beyond last", 201, 300, nil, 1, 200},
		{"prefix is compaction: no-op", 1, 150, nil, 1, 200},
		{"prefix from before first", 0, 10, nil, 1, 200},
		{"min above max", 50, 40, nil, 1, 200},
		{"middle", 50, 60, ErrMiddleRange, 1, 200},
		{"whole log", 1, 200, nil, 0, 0},
		{"whole log, wider", 0, 1 << 40, nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			cfg := testConfig(fsys, testDir)
			l := mustOpen(t, cfg)
			storeRange(t, l, 1, 200, 8)
			if tt.min == 0 && tt.max == 0 {
				bases := segmentBases(t, fsys, testDir)
				if len(bases) < 3 {
					t.Fatalf("want several segments, got %v", bases)
				}
				tt.min, tt.max, tt.wantFirst, tt.wantL = bases[1], 200, 1, bases[1]-1
			}
			if err := l.DeleteRange(tt.min, tt.max); !errors.Is(err, tt.wantErr) {
				t.Fatalf("DeleteRange(%d, %d) = %v, want %v", tt.min, tt.max, err, tt.wantErr)
			}
			checkRange(t, l, tt.wantFirst, tt.wantL)
			// The log continues after the delete, and so after a reopen.
			next := tt.wantL + 1
			if tt.wantL == 0 {
				next = 5000 // after a whole-log delete any index may follow
			}
			storeRange(t, l, next, next+20, 4)
			first := tt.wantFirst
			if first == 0 {
				first = next
			}
			checkRange(t, l, first, next+20)
			closeLog(t, l)
			l = mustOpen(t, cfg)
			defer closeLog(t, l)
			checkRange(t, l, first, next+20)
		})
	}
}

func TestSegmentRollAndReopen(t *testing.T) {
	for _, batch := range []int{1, 7, 64} {
		fsys := vfs.NewMem()
		cfg := testConfig(fsys, testDir)
		l := mustOpen(t, cfg)
		storeRange(t, l, 1, 300, batch)
		bases := segmentBases(t, fsys, testDir)
		if len(bases) < 4 {
			t.Fatalf("batch %d: got segments %v, want at least 4", batch, bases)
		}
		for i := 1; i < len(bases); i++ {
			if bases[i] <= bases[i-1] {
				t.Fatalf("segment names not increasing: %v", bases)
			}
		}
		checkRange(t, l, 1, 300)
		closeLog(t, l)
		if _, err := fsys.Stat(testDir + "/" + abortName); err == nil {
			t.Fatal("abort file left after clean Close")
		}
		l = mustOpen(t, cfg)
		checkRange(t, l, 1, 300)
		storeRange(t, l, 301, 320, batch)
		checkRange(t, l, 1, 320)
		closeLog(t, l)
	}
}

func TestBatchLargerThanSegment(t *testing.T) {
	l := mustOpen(t, testConfig(vfs.NewMem(), testDir))
	defer closeLog(t, l)
	big := makeEntry(1)
	big.Data = make([]byte, 3*minSegmentSize)
	if err := l.StoreLogs([]*raft.Log{big, makeEntry(2)}); err != nil {
		t.Fatal(err)
	}
	var got raft.Log
	if err := l.GetLog(1, &got); err != nil || len(got.Data) != len(big.Data) {
		t.Fatalf("GetLog(1) = %d bytes, %v; want %d", len(got.Data), err, len(big.Data))
	}
}

func TestClosedLog(t *testing.T) {
	l := mustOpen(t, testConfig(vfs.NewMem(), testDir))
	closeLog(t, l)
	var got raft.Log
	if err := l.GetLog(1, &got); !errors.Is(err, ErrClosed) {
		t.Fatalf("GetLog after Close = %v", err)
	}
	if err := l.StoreLog(makeEntry(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("StoreLog after Close = %v", err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := DefaultConfig()
	c.SegmentSize = 1
	c.FS = nil
	c.Retention.DeleteWhen = "25"
	c.Retention.DiskWarnRatio = 0.95
	err := c.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Validate = %v, want ErrInvalidConfig", err)
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 5 {
		t.Fatalf("Validate = %v, want 5 problems (Dir, FS, SegmentSize, DeleteWhen, ratios)", err)
	}
	good := DefaultConfig()
	good.Dir = t.TempDir()
	if err := good.Validate(); err != nil {
		t.Fatalf("DefaultConfig with Dir: %v", err)
	}
	if _, err := Open(c); err == nil {
		t.Fatal("Open accepted an invalid config")
	}
}

// TestDiscardIfBehind: a log that ends below a restored snapshot is
// deleted so the entries after the snapshot can follow; one that reaches
// the snapshot is kept.
func TestDiscardIfBehind(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, testConfig(fsys, testDir))
	defer closeLog(t, l)
	storeRange(t, l, 1, 10, 3)
	for _, idx := range []uint64{5, 10} {
		if done, err := l.DiscardIfBehind(idx); done || err != nil {
			t.Fatalf("DiscardIfBehind(%d) on a log ending at 10 = %v, %v", idx, done, err)
		}
	}
	checkRange(t, l, 1, 10)
	// Without the discard the entries after a snapshot at 20 are refused.
	if err := l.StoreLogs(makeRange(21, 21)); !errors.Is(err, ErrNonContiguous) {
		t.Fatalf("StoreLogs after a gap = %v, want ErrNonContiguous", err)
	}
	if done, err := l.DiscardIfBehind(20); !done || err != nil {
		t.Fatalf("DiscardIfBehind(20) = %v, %v", done, err)
	}
	storeRange(t, l, 21, 25, 2)
	if first, _ := l.FirstIndex(); first != 21 {
		t.Fatalf("FirstIndex after the discard = %d, want 21", first)
	}
	checkRange(t, l, 21, 25)
	if done, _ := l.DiscardIfBehind(20); done {
		t.Fatal("DiscardIfBehind deleted a log past the snapshot")
	}
}
