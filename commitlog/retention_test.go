package commitlog

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/internal/vfs"
)

// at returns a time `after` from now at the given local hour.
func at(after time.Duration, hour int) time.Time {
	t := time.Now().Add(after)
	return time.Date(t.Year(), t.Month(), t.Day(), hour, 30, 0, 0, time.Local)
}

func TestRetention(t *testing.T) {
	const old = 100 * time.Hour // > 72h by more than a day, so the hour shift keeps it expired
	tests := []struct {
		name        string
		now         time.Time
		usage       float64
		floorSeg    int // floor = last index of this sealed segment; -1: no limit
		wantDeleted int // -1: all sealed segments up to the floor
	}{
		{"young, delete hour, low usage", at(0, 4), 0.5, -1, 0},
		{"expired, delete hour", at(old, 4), 0.5, -1, -1},
		{"expired, other hour, low usage", at(old, 10), 0.5, -1, 0},
		{"expired, other hour, above warn", at(old, 10), 0.8, -1, -1},
		{"young, above force", at(0, 10), 0.86, -1, -1},
		{"expired, delete hour, floor", at(old, 4), 0.5, 1, 2},
		{"above force, floor", at(0, 10), 0.86, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			cfg := testConfig(fsys, testDir)
			var floor atomic.Uint64
			floor.Store(^uint64(0))
			cfg.Retention.Floor = floor.Load
			cfg.Retention.DiskUsage = func(string) (float64, error) { return tt.usage, nil }
			l := mustOpen(t, cfg)
			defer closeLog(t, l)
			storeRange(t, l, 1, 200, 4)
			sealed := len(l.segs) - 1
			if sealed < 4 {
				t.Fatalf("want at least 4 sealed segments, got %d", sealed)
			}
			want := tt.wantDeleted
			if tt.floorSeg >= 0 {
				floor.Store(l.segs[tt.floorSeg].last())
			} else if want < 0 {
				want = min(sealed, maxDeletesPerRun)
			}
			var wantFirst uint64 = 1
			if want > 0 {
				wantFirst = l.segs[want].base
			}
			got, err := l.RunRetentionOnce(tt.now)
			if err != nil || got != want {
				t.Fatalf("RunRetentionOnce = %d, %v; want %d deleted", got, err, want)
			}
			checkRange(t, l, wantFirst, 200)
			if n := len(segmentBases(t, fsys, testDir)); n != sealed+1-want {
				t.Fatalf("%d segment files on disk, want %d", n, sealed+1-want)
			}
		})
	}
}

func TestRetentionKeepsActiveSegment(t *testing.T) {
	cfg := testConfig(vfs.NewMem(), testDir)
	cfg.Retention.Floor = func() uint64 { return ^uint64(0) }
	cfg.Retention.DiskUsage = func(string) (float64, error) { return 0.89, nil }
	l := mustOpen(t, cfg)
	defer closeLog(t, l)
	storeRange(t, l, 1, 100, 4)
	for {
		n, err := l.RunRetentionOnce(at(1000*time.Hour, 4))
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if len(l.segs) != 1 {
		t.Fatalf("%d segments left, want only the active one", len(l.segs))
	}
	checkRange(t, l, l.segs[0].base, 100)
}

func TestDiskFullRefusesWrites(t *testing.T) {
	var usage atomic.Value
	usage.Store(0.95)
	cfg := testConfig(vfs.NewMem(), testDir)
	cfg.Retention.DiskUsage = func(string) (float64, error) { return usage.Load().(float64), nil }
	cfg.Retention.CheckInterval = 2 * time.Millisecond
	l := mustOpen(t, cfg)
	defer closeLog(t, l)
	if err := l.StoreLog(makeEntry(1)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("StoreLog on a full disk = %v, want ErrDiskFull", err)
	}
	checkRange(t, l, 0, 0)
	usage.Store(0.5)
	waitFor(t, func() bool { return l.StoreLog(makeEntry(1)) == nil })
	checkRange(t, l, 1, 1)
}

func TestRetentionLoopDeletes(t *testing.T) {
	cfg := testConfig(vfs.NewMem(), testDir)
	cfg.Retention.Floor = func() uint64 { return ^uint64(0) }
	cfg.Retention.DiskUsage = func(string) (float64, error) { return 0.88, nil }
	cfg.Retention.CheckInterval = 2 * time.Millisecond
	l := mustOpen(t, cfg)
	defer closeLog(t, l)
	storeRange(t, l, 1, 100, 4)
	waitFor(t, func() bool { first, _ := l.FirstIndex(); return first > 1 })
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond) // polling interval of a condition wait
	}
}

// TestFreedDiskTakesWritesBeforeNextRetentionRun: a refusal by usage ratio
// clears at the next space check (200 ms), not at the next retention run
// (here: never) — a node freed by hand must not keep its group from a
// majority for CheckInterval (10 s by default).
func TestFreedDiskTakesWritesBeforeNextRetentionRun(t *testing.T) {
	var usage atomic.Value
	usage.Store(0.95)
	cfg := testConfig(vfs.NewMem(), testDir)
	cfg.Retention.DiskUsage = func(string) (float64, error) { return usage.Load().(float64), nil }
	cfg.Retention.CheckInterval = 0 // retention runs only when asked
	l := mustOpen(t, cfg)
	defer closeLog(t, l)
	if _, err := l.RunRetentionOnce(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := l.StoreLog(makeEntry(1)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("StoreLog on a full disk = %v, want ErrDiskFull", err)
	}
	usage.Store(0.5)
	start := time.Now()
	waitFor(t, func() bool { return l.StoreLog(makeEntry(1)) == nil })
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("writes resumed after %v", d)
	}
	checkRange(t, l, 1, 1)
}
