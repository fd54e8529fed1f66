package chaos

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// requireHost skips the test unless it can drive Docker and the network
// tools as root.
func requireHost(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chaos: needs root (network namespaces, iptables, loop mounts)")
	}
	for _, tool := range []string{"docker", "nsenter", "iptables", "losetup", "mkfs.ext4", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("chaos: %s not found on the host", tool)
		}
	}
	if out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		t.Skipf("chaos: docker unavailable: %v %s", err, bytes.TrimSpace(out))
	}
}

// run runs a host command and returns its trimmed combined output.
func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		return s, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, s)
	}
	return s, nil
}

// docker runs one docker command.
func docker(args ...string) (string, error) { return run("docker", args...) }

// mustDocker runs one docker command and fails the test on an error.
func mustDocker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := docker(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runID names this process's containers, networks and images apart from
// any other run on the host.
var runID = fmt.Sprintf("chaos%d-%04x", os.Getpid(), rand.IntN(1<<16))

// buildImage builds the static binary (CGO_ENABLED=0) and a FROM-scratch
// image of it, removed at cleanup; it returns the image's tag and the
// binary (the host runs it for admin commands).
func buildImage(t *testing.T) (image, bin string) {
	t.Helper()
	dir := t.TempDir()
	bin = filepath.Join(dir, "raftmq")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/raftmq")
	build.Dir = filepath.Join("..", "..") // the main module
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building raftmq: %v\n%s", err, out)
	}
	df := "FROM scratch\nCOPY raftmq /raftmq\nENTRYPOINT [\"/raftmq\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	image = "raftmq-" + runID + ":test"
	start := time.Now()
	mustDocker(t, "build", "-q", "-t", image, dir)
	t.Cleanup(func() { _, _ = docker("rmi", "-f", image) })
	t.Logf("image %s built in %v", image, time.Since(start).Round(time.Millisecond))
	return image, bin
}

// network is a private bridge network with a /24 subnet of its own.
type network struct {
	name   string
	prefix string // "172.29.7." — the subnet's first three octets
}

// createNetwork creates a bridge network on a free 172.2x.y.0/24 and
// removes it at cleanup (after the containers, which are registered
// later and so cleaned up first).
func createNetwork(t *testing.T, name string) *network {
	t.Helper()
	var lastErr error
	for range 20 {
		prefix := fmt.Sprintf("172.%d.%d.", 24+rand.IntN(7), rand.IntN(256))
		_, err := docker("network", "create", "--driver", "bridge", "--subnet", prefix+"0/24",
			"--label", labelPID+"="+strconv.Itoa(os.Getpid()), name)
		if err == nil {
			t.Cleanup(func() { _, _ = docker("network", "rm", name) })
			return &network{name: name, prefix: prefix}
		}
		lastErr = err
	}
	t.Fatalf("no free subnet for network %s: %v", name, lastErr)
	return nil
}

// ip is host number n of the network.
func (n *network) ip(host int) string { return fmt.Sprintf("%s%d", n.prefix, host) }
