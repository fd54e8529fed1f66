package commitlog

import (
	"fmt"
	"syscall"
)

// statfsUsage is the default RetentionConfig.DiskUsage: the used fraction
// of the file system as seen by an unprivileged writer (blocks reserved for
// root count as used, as df reports).
func statfsUsage(dir string) (float64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("commitlog: statfs %s: %w", dir, err)
	}
	if st.Blocks == 0 {
		return 0, nil
	}
	used := st.Blocks - st.Bfree
	return float64(used) / float64(used+st.Bavail), nil
}

// statfsFree is the default RetentionConfig.FreeBytes: the bytes of the
// file system holding dir that an unprivileged writer may still use.
func statfsFree(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("commitlog: statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * st.Bsize, nil
}
