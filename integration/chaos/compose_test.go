package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestComposeCluster: deploy/compose.yaml, with the image this test
// builds, starts a name server and a 3-node group whose brokers all turn
// healthy (their /healthz checks), and the CLI in the compose network
// sends and consumes through it — what `make compose-up` promises.
func TestComposeCluster(t *testing.T) {
	requireHost(t)
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skip("compose: docker-compose not found on the host")
	}
	image, _ := buildImage(t)
	project := "raftmq-" + runID + "-compose"
	file, err := filepath.Abs(filepath.Join("..", "..", "deploy", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "RAFTMQ_IMAGE="+image, "RAFTMQ_NS_PORT="+freePort(t))
	compose := func(timeout time.Duration, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "docker-compose", append([]string{"-f", file, "-p", project}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("docker-compose %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	t.Cleanup(func() {
		if out, err := compose(2*time.Minute, "--profile", "two-groups", "down", "-v"); err != nil {
			t.Logf("compose down: %v\n%s", err, out)
		}
	})
	if _, err := compose(2*time.Minute, "up", "-d"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "every broker container healthy", func() bool {
		out, err := docker("ps", "--filter", "label=com.docker.compose.project="+project, "--format", "{{.Names}} {{.Status}}")
		if err != nil {
			return false
		}
		healthy := 0
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "_a") && strings.Contains(line, "(healthy)") {
				healthy++
			}
		}
		return healthy == 3
	})
	var out string
	waitFor(t, 60*time.Second, "a send through the compose cluster", func() bool {
		out, err = compose(time.Minute, "run", "--rm", "namesrv", "send", "--namesrv", "namesrv:9876", "--topic", "ComposeTest",
			"--body", "hello", "--count", "3")
		return err == nil
	})
	if n := strings.Count(out, "SEND_OK"); n != 3 {
		t.Fatalf("send printed %d SEND_OK lines:\n%s", n, out)
	}
	out, err = compose(2*time.Minute, "run", "--rm", "namesrv", "consume", "--namesrv", "namesrv:9876", "--topic", "ComposeTest",
		"--group", "compose-test", "--from", "first", "--count", "3", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	bodies := 0
	for _, line := range strings.Split(out, "\n") {
		var m struct{ Body string }
		if json.Unmarshal([]byte(strings.TrimSpace(line)), &m) == nil && m.Body == "hello" {
			bodies++
		}
	}
	if bodies != 3 {
		t.Fatalf("consume printed %d messages with body hello:\n%s", bodies, out)
	}
}

// freePort is a loopback TCP port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}
