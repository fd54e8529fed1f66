package chaos

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// smallDisk is a loop-mounted ext4 file system a node keeps its data on,
// so that a fault can fill it for real (ENOSPC, not a simulated usage).
type smallDisk struct {
	mnt    string
	filler string
}

// newSmallDisk creates a sizeMB ext4 image under dir, loop-mounts it at
// dir/mnt, and unmounts it (detaching the loop device) at cleanup.
func newSmallDisk(t *testing.T, dir string, sizeMB int) *smallDisk {
	t.Helper()
	img, mnt := filepath.Join(dir, "disk.img"), filepath.Join(dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(int64(sizeMB) << 20)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// -m 0: no blocks reserved for root (the broker runs as root).
	if _, err := run("mkfs.ext4", "-q", "-m", "0", img); err != nil {
		t.Fatal(err)
	}
	if _, err := run("mount", "-o", "loop", img, mnt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// -d detaches the loop device too; lazy in case a container
		// still held a file open a moment ago.
		if _, err := run("umount", "-d", mnt); err != nil {
			_, _ = run("umount", "-l", "-d", mnt)
		}
	})
	return &smallDisk{mnt: mnt, filler: filepath.Join(mnt, "filler")}
}

// fill writes a filler file until the file system is full.
func (d *smallDisk) fill() error {
	f, err := os.OpenFile(d.filler, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			return err
		}
	}
	// The last partial megabyte: smaller writes until nothing fits.
	for n := len(buf) / 2; n >= 512; n /= 2 {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				break
			}
		}
	}
	return nil
}

// free deletes the filler file.
func (d *smallDisk) free() error {
	err := os.Remove(d.filler)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// usage is the file system's used fraction.
func (d *smallDisk) usage() float64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.mnt, &st); err != nil || st.Blocks == 0 {
		return 0
	}
	return 1 - float64(st.Bavail)/float64(st.Blocks)
}
