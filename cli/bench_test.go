package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
)

// TestBenchE2EPush: bench e2e --push receives every message sent through a
// push consumer's handler and reports its latency.
func TestBenchE2EPush(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	g.WaitLeader(10 * time.Second)
	var out string
	g.Eventually(20*time.Second, func() error {
		var err error
		out, _, err = run(t, "bench", "e2e", "-n", g.NSAddr, "--push", "--mode", "sync", "--clients", "1",
			"--msgs", "40", "--topic", "e2e-push", "--queues", "2", "--size", "64", "--no-progress", "--idle", "5s")
		return err
	})
	if !strings.Contains(out, "e2e sync-push: 40 msgs") || !strings.Contains(out, "latency ms:") || !strings.Contains(out, " 0 errors") {
		t.Fatalf("bench e2e --push printed:\n%s", out)
	}
}
