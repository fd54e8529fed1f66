package commitlog

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/raftmq/raftmq/internal/vfs"
)

// mountTmpfs mounts a tmpfs of size (e.g. "16m") under t.TempDir() and
// unmounts it when the test ends; without root the test is skipped.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (a real file system that fills up); run as root to test real ENOSPC")
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount tmpfs (%v: %s); the real-ENOSPC test needs it", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file in dir until the file system says ENOSPC, down
// to its last page, and returns the file's path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 4096, 1} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling %s: %v", name, err)
				}
				break
			}
		}
	}
	return name
}

// assertRefused checks that err is a no-space refusal, not a failure.
func assertRefused(t *testing.T, l *Log, err error) {
	t.Helper()
	if !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrFailed) {
		t.Fatalf("StoreLogs on a full disk = %v, want ErrNoSpace and not ErrFailed", err)
	}
	if ferr := l.Err(); ferr != nil {
		t.Fatalf("a refused write made the log fail: %v", ferr)
	}
	if !l.DiskFull() {
		t.Fatal("DiskFull is false right after a no-space refusal")
	}
}

// storeUntilRefused stores single entries from next on until one is
// refused, and returns the last acknowledged index.
func storeUntilRefused(t *testing.T, l *Log, next uint64) uint64 {
	t.Helper()
	for i := next; i < next+1_000_000; i++ {
		if err := l.StoreLogs(makeRange(i, i)); err != nil {
			assertRefused(t, l, err)
			t.Logf("entry %d refused: %v", i, err)
			return i - 1
		}
	}
	t.Fatal("a full disk never refused a write")
	return 0
}

// storeWhenSpace retries storing [from, to] until the log takes it: the
// refusal clears by itself at the next free-space check.
func storeWhenSpace(t *testing.T, l *Log, from, to uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := l.StoreLogs(makeRange(from, to))
		if err == nil {
			return
		}
		if !errors.Is(err, ErrNoSpace) || time.Now().After(deadline) {
			t.Fatalf("StoreLogs after space returned: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // poll: the next free-space check clears the refusal
	}
}

// openReal opens a log that is closed, if the test has not, before the
// file system under it is unmounted.
func openReal(t *testing.T, cfg Config) *Log {
	l := mustOpen(t, cfg)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func realConfig(dir string) Config {
	c := testConfig(vfs.OS, dir)
	c.SegmentSize = 1 << 20
	c.Retention.MinFreeBytes = 0 // no margin: the writes themselves meet ENOSPC
	return c
}

// TestRealENOSPCRefusesAndRecovers fills a real (tmpfs) file system under
// the log: the write that meets ENOSPC is refused with ErrNoSpace and the
// log does not fail; reopened on the full disk it holds exactly the
// acknowledged entries and still refuses; once space is freed it takes
// writes again by itself.
func TestRealENOSPCRefusesAndRecovers(t *testing.T) {
	mnt := mountTmpfs(t, "16m")
	cfg := realConfig(filepath.Join(mnt, "log"))
	l := openReal(t, cfg)
	storeRange(t, l, 1, 100, 10)
	filler := fillDisk(t, mnt)
	acked := storeUntilRefused(t, l, 101)
	if err := l.StoreLogs(makeRange(acked+1, acked+1)); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("second write on a full disk = %v, want ErrNoSpace", err)
	}
	big := makeRange(acked+1, acked+8000) // larger than a segment: needs new space
	assertRefused(t, l, l.StoreLogs(big))
	checkRange(t, l, 1, acked)
	if err := l.Close(); err != nil && !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Close on a full disk: %v", err)
	}

	l = openReal(t, cfg)
	checkRange(t, l, 1, acked)
	fillDisk(t, mnt) // Close gave back the active segment's preallocated tail
	assertRefused(t, l, l.StoreLogs(makeRange(acked+1, acked+1)))
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	storeWhenSpace(t, l, acked+1, acked+50)
	closeLog(t, l)

	l = openReal(t, cfg)
	checkRange(t, l, 1, acked+50)
}

// TestRealMinFreeBytesRefusesBeforeFull: with fewer than MinFreeBytes free
// the log refuses before any write meets ENOSPC, and takes writes again
// once space is freed.
func TestRealMinFreeBytesRefusesBeforeFull(t *testing.T) {
	mnt := mountTmpfs(t, "16m")
	cfg := realConfig(filepath.Join(mnt, "log"))
	cfg.Retention.MinFreeBytes = 4 << 20
	l := openReal(t, cfg)
	storeRange(t, l, 1, 20, 5)
	free, err := statfsFree(mnt)
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, free-2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	acked := storeUntilRefused(t, l, 21)
	if left, _ := statfsFree(mnt); left == 0 {
		t.Fatal("the disk filled up: MinFreeBytes did not refuse first")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	storeWhenSpace(t, l, acked+1, acked+10)
	checkRange(t, l, 1, acked+10)
}

// TestNoSpaceWriteLeavesNoRecord: ENOSPC from a write of the segment (torn
// after a few bytes), of its entry index (the record itself complete), or
// of the checkpoint of a roll is a refusal: the log does not fail, and a
// process crash right after it (the page cache, with every byte written,
// survives) recovers exactly the entries stored before, so nothing of the
// refused batch is found later. The next check takes
// writes again.
func TestNoSpaceWriteLeavesNoRecord(t *testing.T) {
	cases := []struct {
		name  string
		fault vfs.Injector
		batch uint64
	}{
		{"segment torn", vfs.ShortWrite(".log", 10, syscall.ENOSPC), 5},
		{"entry index", vfs.FailOnce(vfs.OpWrite, ".idx", syscall.ENOSPC), 5},
		{"quota on segment", vfs.FailOnce(vfs.OpWrite, ".log", syscall.EDQUOT), 5},
		{"checkpoint of a roll", vfs.FailOnce(vfs.OpWrite, ckptTempName, syscall.ENOSPC), 40},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			ffs := vfs.NewFaultFS(mem)
			l := mustOpen(t, testConfig(ffs, testDir))
			defer closeLog(t, l)
			storeRange(t, l, 1, 10, 5)
			ffs.Inject(tc.fault)
			assertRefused(t, l, l.StoreLogs(makeRange(11, 10+tc.batch)))
			ffs.Inject(nil)
			checkRange(t, l, 1, 10)

			crashed := mustOpen(t, testConfig(killClone(t, mem), testDir))
			checkRange(t, crashed, 1, 10)
			storeRange(t, crashed, 11, 12, 2) // the refused batch left nothing in the way
			closeLog(t, crashed)

			storeWhenSpace(t, l, 11, 10+tc.batch)
			checkRange(t, l, 1, 10+tc.batch)
		})
	}
}

// killClone is what a killed process leaves on mem: everything written,
// as the kernel's page cache keeps it, not only what was synced.
func killClone(t *testing.T, mem *vfs.MemFS) *vfs.MemFS {
	t.Helper()
	names, err := mem.ReadDir(testDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		f, err := mem.OpenFile(filepath.Join(testDir, n), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(f.Sync(), f.Close()); err != nil {
			t.Fatal(err)
		}
	}
	if err := mem.SyncDir(testDir); err != nil {
		t.Fatal(err)
	}
	return mem.CrashClone()
}

// TestNoSpaceAtFsyncStaysFatal: an ENOSPC that surfaces only at fsync (ext4
// delayed allocation) is a failed fsync, sticky like any other: after it
// the kernel may have dropped the pages, so the log must not retry.
func TestNoSpaceAtFsyncStaysFatal(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFaultFS(mem)
	l := mustOpen(t, testConfig(ffs, testDir))
	defer l.Close()
	storeRange(t, l, 1, 10, 5)
	ffs.Inject(vfs.FailOnce(vfs.OpSync, ".log", syscall.ENOSPC))
	if err := l.StoreLogs(makeRange(11, 12)); err == nil || errors.Is(err, ErrNoSpace) {
		t.Fatalf("StoreLogs with ENOSPC at fsync = %v, want a failure, not a refusal", err)
	}
	ffs.Inject(nil)
	if l.Err() == nil {
		t.Fatal("ENOSPC at fsync did not make the log fail")
	}
	if err := l.StoreLogs(makeRange(11, 12)); !errors.Is(err, ErrFailed) {
		t.Fatalf("StoreLogs after a failed fsync = %v, want ErrFailed", err)
	}
}
