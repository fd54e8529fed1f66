package commitlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/vfs"
)

// TestCrashKeepsAcknowledged crashes after every acknowledged batch: in
// SyncFlush everything StoreLogs returned for must survive.
func TestCrashKeepsAcknowledged(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, testConfig(fsys, testDir))
	defer closeLog(t, l)
	for last := uint64(0); last < 120; last += 6 {
		storeRange(t, l, last+1, last+6, 6)
		crashed := fsys.CrashClone()
		c := mustOpen(t, testConfig(crashed, testDir))
		checkRange(t, c, 1, last+6)
		closeLog(t, c)
	}
}

// lastTwo stores entries until the active segment holds at least three and
// returns the log's last index and the positions of its last two records.
func lastTwo(t *testing.T, l *Log) (last uint64, e1, e2 entry, seg string) {
	t.Helper()
	storeRange(t, l, 1, 20, 1)
	for l.active().count < 3 {
		storeRange(t, l, l.lastIndex+1, l.lastIndex+1, 1)
	}
	last = l.lastIndex
	var err1, err2 error
	e1, err1 = l.entryAt(last - 1)
	e2, err2 = l.entryAt(last)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return last, e1, e2, l.active().f.Name()
}

// TestCutAtEveryByte cuts (or garbles) the last segment at every byte of
// its last two records: recovery keeps exactly the whole records before
// the cut and the log goes on from there.
func TestCutAtEveryByte(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, testConfig(fsys, testDir))
	last, e1, e2, seg := lastTwo(t, l)
	base := fsys.CrashClone()
	closeLog(t, l)
	end2 := e2.pos + int64(e2.length)
	for _, garble := range []bool{false, true} {
		for cut := e1.pos; cut <= end2; cut++ {
			want := last - 2
			switch {
			case cut == end2:
				want = last
			case cut >= e1.pos+int64(e1.length):
				want = last - 1
			}
			if garble && cut == end2 {
				continue
			}
			fs := base.CrashClone()
			damage(t, fs, seg, cut, end2, garble)
			c := mustOpen(t, testConfig(fs, testDir))
			gotLast, _ := c.LastIndex()
			if gotLast != want {
				t.Fatalf("garble=%v cut at %d (records at %d, %d): last = %d, want %d",
					garble, cut, e1.pos, e2.pos, gotLast, want)
			}
			if cut == e1.pos || cut == end2-1 {
				checkRange(t, c, 1, want)
			}
			storeRange(t, c, want+1, want+1, 1)
			closeLog(t, c)
		}
	}
	// One full reopen after a cut proves the repaired files read back.
	fs := base.CrashClone()
	damage(t, fs, seg, e2.pos+3, end2, true)
	c := mustOpen(t, testConfig(fs, testDir))
	storeRange(t, c, last, last+5, 2)
	closeLog(t, c)
	c = mustOpen(t, testConfig(fs, testDir))
	defer closeLog(t, c)
	checkRange(t, c, 1, last+5)
}

// damage truncates the file at cut, or overwrites [cut, end) with garbage.
func damage(t *testing.T, fs vfs.FS, name string, cut, end int64, garble bool) {
	t.Helper()
	f, err := fs.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if garble {
		junk := make([]byte, end-cut)
		for i := range junk {
			junk[i] = byte(0xA5 ^ i)
		}
		_, err = f.WriteAt(junk, cut)
	} else {
		err = f.Truncate(cut)
	}
	if err = errors.Join(err, f.Sync()); err != nil {
		t.Fatal(err)
	}
}

func flipBit(t *testing.T, fs vfs.FS, name string, at int64) {
	t.Helper()
	f, err := fs.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestBitFlipInTail flips a bit in a record after the checkpoint: recovery
// drops that record and everything after it, and since an intact record
// follows, marks the log as recovering through it.
func TestBitFlipInTail(t *testing.T) {
	tests := []struct {
		name string
		off  int64 // inside the record
	}{
		{"length", 0}, {"crc", 5}, {"index", 9}, {"term", 17}, {"appendedAt", 25},
		{"type", 32}, {"version", 33}, {"extLen", 35}, {"extensions", 39}, {"data", 60},
	}
	fsys := vfs.NewMem()
	l := mustOpen(t, testConfig(fsys, testDir))
	last, e1, _, seg := lastTwo(t, l)
	base := fsys.CrashClone()
	closeLog(t, l)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := base.CrashClone()
			flipBit(t, fs, seg, e1.pos+tt.off)
			c := mustOpen(t, testConfig(fs, testDir))
			defer closeLog(t, c)
			checkRange(t, c, 1, last-2)
			// The intact record after it shows the flip is not a torn tail.
			if got := c.RecoveringThrough(); got != last {
				t.Fatalf("RecoveringThrough = %d, want %d", got, last)
			}
		})
	}
}

// TestBitFlipInSealedSegment flips a bit in a sealed, synced record:
// Open finds it (every sealed record is checked), cuts the log there and
// records that it recovers through the old last index; the marker
// survives a reopen and goes once the log is stored through it again.
func TestBitFlipInSealedSegment(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := testConfig(fsys, testDir)
	l := mustOpen(t, cfg)
	storeRange(t, l, 1, 100, 3)
	const victim = 10
	e, err := l.entryAt(victim)
	if err != nil {
		t.Fatal(err)
	}
	name := l.segFor(victim).f.Name()
	if l.segFor(victim) == l.active() {
		t.Fatal("victim must be in a sealed segment")
	}
	closeLog(t, l)
	flipBit(t, fsys, name, e.pos+int64(e.length)-1)
	l = mustOpen(t, cfg)
	checkRange(t, l, 1, victim-1)
	if got := l.RecoveringThrough(); got != 100 {
		t.Fatalf("RecoveringThrough = %d, want 100", got)
	}
	storeRange(t, l, victim, 60, 3)
	crashed := fsys.CrashClone() // the marker is durable, not just in memory
	closeLog(t, l)
	cfg = testConfig(crashed, testDir)
	l = mustOpen(t, cfg)
	if got := l.RecoveringThrough(); got != 100 {
		t.Fatalf("after reopen at 60: RecoveringThrough = %d, want 100", got)
	}
	storeRange(t, l, 61, 100, 3)
	if got := l.RecoveringThrough(); got != 0 {
		t.Fatalf("stored through 100: RecoveringThrough = %d, want 0", got)
	}
	closeLog(t, l)
	l = mustOpen(t, cfg)
	defer closeLog(t, l)
	if got := l.RecoveringThrough(); got != 0 {
		t.Fatalf("reopened: RecoveringThrough = %d, want 0", got)
	}
	checkRange(t, l, 1, 100)
}

// TestTornTailSetsNoMarker: a torn or unwritten tail after a power loss
// is cut as before, without the recovering marker (nothing synced was
// lost), so a group whose every node lost power can still elect.
func TestTornTailSetsNoMarker(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, testConfig(fsys, testDir))
	last, _, e2, seg := lastTwo(t, l)
	crashed := fsys.CrashClone()
	closeLog(t, l)
	damage(t, crashed, seg, e2.pos+3, e2.pos+int64(e2.length), true)
	c := mustOpen(t, testConfig(crashed, testDir))
	defer closeLog(t, c)
	checkRange(t, c, 1, last-1)
	if got := c.RecoveringThrough(); got != 0 {
		t.Fatalf("RecoveringThrough = %d after a torn tail, want 0", got)
	}
}

// TestBitFlipWhileOpen flips a bit in a sealed record of an open log: it
// is detected on read and never returned; its neighbours still read.
func TestBitFlipWhileOpen(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := testConfig(fsys, testDir)
	l := mustOpen(t, cfg)
	storeRange(t, l, 1, 100, 3)
	const victim = 10
	e, err := l.entryAt(victim)
	if err != nil {
		t.Fatal(err)
	}
	name := l.segFor(victim).f.Name()
	if l.segFor(victim) == l.active() {
		t.Fatal("victim must be in a sealed segment")
	}
	defer closeLog(t, l)
	flipBit(t, fsys, name, e.pos+int64(e.length)-1)
	var got raft.Log
	if err := l.GetLog(victim, &got); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("GetLog(corrupt) = %v, want ErrCorrupt", err)
	}
	if got.Data != nil {
		t.Fatal("GetLog filled the log from a corrupt record")
	}
	for _, i := range []uint64{victim - 1, victim + 1} {
		if err := l.GetLog(i, &got); err != nil {
			t.Fatalf("GetLog(%d) = %v", i, err)
		}
	}
}

func TestFsyncFailure(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	l := mustOpen(t, testConfig(ffs, testDir))
	storeRange(t, l, 1, 10, 2)
	ffs.Inject(vfs.FailOnce(vfs.OpSync, ".log", vfs.ErrInjected))
	if err := l.StoreLogs(makeRange(11, 15)); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("StoreLogs with failing fsync = %v, want ErrInjected", err)
	}
	if err := l.StoreLogs(makeRange(11, 15)); !errors.Is(err, ErrFailed) {
		t.Fatalf("StoreLogs after failed fsync = %v, want ErrFailed", err)
	}
	// Power loss: the unsynced batch is gone.
	c := mustOpen(t, testConfig(mem.CrashClone(), testDir))
	checkRange(t, c, 1, 10)
	closeLog(t, c)
	// Restart without power loss: the batch may or may not be there; the
	// log is consistent and continues.
	if err := l.Close(); err != nil {
		t.Fatalf("Close after failure: %v", err)
	}
	ffs.Inject(nil)
	l = mustOpen(t, testConfig(ffs, testDir))
	defer closeLog(t, l)
	last, _ := l.LastIndex()
	if last != 10 && last != 15 {
		t.Fatalf("last after restart = %d, want 10 or 15", last)
	}
	storeRange(t, l, last+1, last+5, 5)
	checkRange(t, l, 1, last+5)
}

func TestShortWrite(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	cfg := testConfig(ffs, testDir)
	l := mustOpen(t, cfg)
	storeRange(t, l, 1, 10, 2)
	ffs.Inject(vfs.ShortWrite(".log", 10, vfs.ErrInjected))
	if err := l.StoreLogs(makeRange(11, 15)); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("StoreLogs with short write = %v, want ErrInjected", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close after failure: %v", err)
	}
	ffs.Inject(nil)
	l = mustOpen(t, cfg)
	checkRange(t, l, 1, 10)
	storeRange(t, l, 11, 15, 5)
	closeLog(t, l)
	l = mustOpen(t, cfg)
	defer closeLog(t, l)
	checkRange(t, l, 1, 15)
}

func TestAbortAndCheckpointFiles(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, testConfig(fsys, testDir))
	if _, err := fsys.Stat(testDir + "/" + abortName); err != nil {
		t.Fatalf("abort file missing while open: %v", err)
	}
	storeRange(t, l, 1, 50, 4)
	closeLog(t, l)
	if _, err := fsys.Stat(testDir + "/" + abortName); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("abort file after Close: %v", err)
	}
	f, err := fsys.OpenFile(testDir+"/"+ckptName, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, checkpointSize)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	ck, err := decodeCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if ck.index != 50 {
		t.Fatalf("checkpoint index = %d, want 50", ck.index)
	}
}

// TestAsyncFlush: writes return before the fsync and the background flusher
// makes them durable within a few intervals.
func TestAsyncFlush(t *testing.T) {
	fsys := vfs.NewMem()
	cfg := testConfig(fsys, testDir)
	cfg.FlushMode, cfg.FlushInterval = AsyncFlush, 5*time.Millisecond
	l := mustOpen(t, cfg)
	defer closeLog(t, l)
	storeRange(t, l, 1, 60, 4)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := mustOpen(t, testConfig(fsys.CrashClone(), testDir))
		last, _ := c.LastIndex()
		checkRange(t, c, min(1, last), last) // always a prefix of what was written
		closeLog(t, c)
		if last == 60 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s only %d of 60 entries durable", last)
		}
		time.Sleep(5 * time.Millisecond) // polling interval of a condition wait
	}
}

// TestNoResurrectionAfterRepair: a record after a corrupt one must not come
// back once the log has been repaired and written past the corruption.
func TestNoResurrectionAfterRepair(t *testing.T) {
	fsys := vfs.NewMem()
	l := mustOpen(t, testConfig(fsys, testDir))
	last, e1, _, seg := lastTwo(t, l)
	crashed := fsys.CrashClone()
	closeLog(t, l)
	flipBit(t, crashed, seg, e1.pos+60) // record last-1 corrupt, record last intact
	c := mustOpen(t, testConfig(crashed, testDir))
	checkRange(t, c, 1, last-2)
	storeRange(t, c, last-1, last-1, 1) // same bytes as before: record last is aligned after it
	again := crashed.CrashClone()
	closeLog(t, c)
	c = mustOpen(t, testConfig(again, testDir))
	defer closeLog(t, c)
	checkRange(t, c, 1, last-1)
}

// TestOneWriteOneFsyncPerBatch counts file operations of StoreLogs: one
// segment write, one index write and, in SyncFlush only, one segment fsync.
func TestOneWriteOneFsyncPerBatch(t *testing.T) {
	for _, mode := range []FlushMode{SyncFlush, AsyncFlush} {
		ffs := vfs.NewFaultFS(vfs.NewMem())
		cfg := testConfig(ffs, testDir)
		cfg.FlushMode, cfg.FlushInterval, cfg.SegmentSize = mode, time.Hour, 1<<20
		l := mustOpen(t, cfg)
		storeRange(t, l, 1, 4, 4)                                           // the first batch creates the segment
		waitFor(t, func() bool { return l.pre.move(fileReady, fileReady) }) // preallocator quiet
		var mu sync.Mutex
		counts := map[string]int{}
		ffs.Inject(vfs.InjectorFunc(func(op vfs.Op, name string, n int) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			counts[fmt.Sprintf("%v %s", op, filepath.Ext(name))]++
			return n, nil
		}))
		storeRange(t, l, 5, 68, 64)
		ffs.Inject(nil)
		want := map[string]int{
			fmt.Sprintf("%v .log", vfs.OpWrite): 1,
			fmt.Sprintf("%v .idx", vfs.OpWrite): 1,
		}
		if mode == SyncFlush {
			want[fmt.Sprintf("%v .log", vfs.OpSync)] = 1
		}
		mu.Lock()
		if !reflect.DeepEqual(counts, want) {
			t.Errorf("%v: file operations of one StoreLogs = %v, want %v", mode, counts, want)
		}
		mu.Unlock()
		closeLog(t, l)
	}
}
