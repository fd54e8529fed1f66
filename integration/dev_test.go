package integration

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDevCommandAndAdminCLI runs `raftmq dev` as `make run` does (on free
// ports) and drives it with the admin commands.
func TestDevCommandAndAdminCLI(t *testing.T) {
	ns := strconv.Itoa(freePort(t))
	bp, rp := strconv.Itoa(20000+freePort(t)%20000), strconv.Itoa(40000+freePort(t)%20000)
	data := filepath.Join(t.TempDir(), "data")
	hp := strconv.Itoa(freePort(t))
	p := startProc(t, "dev", "--data", data, "--namesrv-port", ns, "--broker-port", bp, "--raft-port", rp, "--http-port", hp,
		"--dashboard-port", "0")
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(p.output(), "Stop with Ctrl-C") })
	out := p.output()
	for _, want := range []string{"name server   127.0.0.1:" + ns, "leader", "follower", "cluster status"} {
		if !strings.Contains(out, want) {
			t.Fatalf("dev banner lacks %q:\n%s", want, out)
		}
	}
	nsAddr := "127.0.0.1:" + ns
	waitFor(t, 10*time.Second, func() bool {
		resp, err := http.Get("http://127.0.0.1:" + hp + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	admin := func(args ...string) string {
		t.Helper()
		b, err := exec.Command(raftmqBin, append(args, "--namesrv", nsAddr)...).CombinedOutput()
		if err != nil {
			t.Fatalf("raftmq %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	status := admin("cluster", "status")
	if strings.Count(status, "broker-a") != 3 || strings.Count(status, "Leader") != 1 {
		t.Fatalf("cluster status:\n%s", status)
	}
	if got := admin("topic", "create", "--topic", "CliTopic", "--queues", "3"); !strings.Contains(got, "created topic CliTopic on broker-a") {
		t.Fatalf("topic create: %s", got)
	}
	waitFor(t, 40*time.Second, func() bool {
		b, err := exec.Command(raftmqBin, "topic", "route", "--topic", "CliTopic", "--namesrv", nsAddr).CombinedOutput()
		return err == nil && strings.Contains(string(b), "broker-a  3     3")
	})
	if got := admin("topic", "list"); !strings.Contains(got, "CliTopic") {
		t.Fatalf("topic list lacks CliTopic: %s", got)
	}
	if got := admin("cluster", "members"); strings.Count(got, "leader") != 1 || strings.Count(got, "follower") != 2 {
		t.Fatalf("cluster members:\n%s", got)
	}
	leaderOf := func(status string) string {
		for _, line := range strings.Split(status, "\n") {
			if f := strings.Fields(line); len(f) > 3 && f[3] == "Leader" {
				return f[1]
			}
		}
		return ""
	}
	before := leaderOf(status)
	if got := admin("cluster", "transfer"); !strings.Contains(got, "transferred") {
		t.Fatalf("cluster transfer: %s", got)
	}
	waitFor(t, 10*time.Second, func() bool {
		b, err := exec.Command(raftmqBin, "cluster", "status", "--namesrv", nsAddr).CombinedOutput()
		now := leaderOf(string(b))
		return err == nil && now != "" && now != before
	})
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Fatalf("dev exit: %v\n%s", err, p.output())
	}
}
