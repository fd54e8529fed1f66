package chaos

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A run that was killed (a test timeout, ^C) cannot run its cleanups.
// Everything a run creates is named after runID, which starts with its
// pid, so the next run removes what a dead process left: its containers,
// networks, image, and the loop mounts under os.TempDir()/runID.

// labelPID is the label every container and network of a run carries.
const labelPID = "raftmq.chaos.pid"

// sweepStale removes the leftovers of runs whose process is gone.
func sweepStale(t *testing.T) {
	t.Helper()
	for _, kind := range []string{"container", "network"} {
		args := []string{kind, "ls", "--filter", "label=" + labelPID, "--format", `{{.ID}} {{.Label "` + labelPID + `"}}`}
		if kind == "container" {
			args = append(args, "-a")
		}
		out, err := docker(args...)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(out, "\n") {
			id, pid, ok := strings.Cut(line, " ")
			if ok && !alive(pid) {
				t.Logf("removing %s %s of dead run %s", kind, id, pid)
				_, _ = docker(kind, "rm", "-f", id)
			}
		}
	}
	if out, err := docker("images", "--format", "{{.Repository}}:{{.Tag}}", "raftmq-chaos*"); err == nil {
		for _, ref := range strings.Fields(out) {
			if pid := pidOf(strings.TrimPrefix(ref, "raftmq-")); pid != "" && !alive(pid) {
				_, _ = docker("rmi", "-f", ref)
			}
		}
	}
	sweepMounts(t)
}

// sweepMounts unmounts (and detaches the loop devices of) the small disks
// of dead runs and deletes their directories.
func sweepMounts(t *testing.T) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return
	}
	defer f.Close()
	root := filepath.Clean(os.TempDir()) + "/"
	dead := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.HasPrefix(fields[1], root+"chaos") {
			continue
		}
		dir := strings.SplitN(strings.TrimPrefix(fields[1], root), "/", 2)[0]
		if pid := pidOf(dir); pid != "" && !alive(pid) {
			t.Logf("unmounting %s of a dead run", fields[1])
			_, _ = run("umount", "-l", "-d", fields[1])
			dead[filepath.Join(root, dir)] = true
		}
	}
	for dir := range dead {
		_ = os.RemoveAll(dir)
	}
}

// pidOf is the pid in a runID ("chaos123-ab12" → "123"), "" if none.
func pidOf(id string) string {
	rest, ok := strings.CutPrefix(id, "chaos")
	if !ok {
		return ""
	}
	pid, _, _ := strings.Cut(rest, "-")
	if _, err := strconv.Atoi(pid); err != nil {
		return ""
	}
	return pid
}

// alive reports whether process pid exists.
func alive(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return true // not ours to judge
	}
	return !errors.Is(syscall.Kill(n, 0), syscall.ESRCH)
}
