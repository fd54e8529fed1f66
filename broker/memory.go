package broker

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// physicalMemory is the memory the node's page cache can use, for
// accessMessageInMemoryMaxRatio: the machine's RAM, or the memory limit of
// the process's cgroup when that is lower (a container's page cache is
// charged to its cgroup, as the JVM's container-aware
// getTotalPhysicalMemorySize reports to RocketMQ). 0 when unknown.
func physicalMemory() int64 {
	total := systemMemory()
	if limit := cgroupMemoryLimit(); limit > 0 && (total <= 0 || limit < total) {
		return limit
	}
	return total
}

// cgroupMemoryLimit is the memory limit of this process's cgroup (v2
// memory.max, else v1 memory.limit_in_bytes), 0 when there is none or it
// cannot be read.
func cgroupMemoryLimit() int64 {
	var paths []string
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		// "0::/path" (v2) or "N:memory:/path" (v1), relative to the
		// mount as this process sees it.
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.SplitN(line, ":", 3)
			switch {
			case len(f) < 3:
			case f[0] == "0" && f[1] == "":
				paths = append(paths, filepath.Join("/sys/fs/cgroup", f[2], "memory.max"))
			case slices.Contains(strings.Split(f[1], ","), "memory"):
				paths = append(paths, filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes"))
			}
		}
	}
	paths = append(paths, "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// "max" (v2) or a page-rounded huge number (v1) mean no limit;
		// both are over any machine's RAM, so the caller's min drops them.
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 {
			return 0
		}
		return n
	}
	return 0
}
