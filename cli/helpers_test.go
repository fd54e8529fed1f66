package cli

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
)

// startTopic starts a 3-node group, creates topic with queues queues
// through the CLI (retrying while the group elects) and returns the group
// and its leader.
func startTopic(t *testing.T, topic string, queues int) (*brokertest.Group, int) {
	t.Helper()
	g := brokertest.Start(t, brokertest.Options{})
	leader := g.WaitLeader(10 * time.Second)
	g.Eventually(10*time.Second, func() error {
		_, _, err := run(t, "topic", "create", "-n", g.NSAddr, "-t", topic, "-q", fmt.Sprint(queues))
		return err
	})
	return g, leader
}

// tryJSON runs a command with --output json and decodes its stdout into
// v; it returns the command's error and fails the test on output that is
// not JSON.
func tryJSON(t *testing.T, v any, args ...string) error {
	t.Helper()
	out, stderr, err := run(t, append(args, "--output", "json")...)
	if err != nil {
		return fmt.Errorf("%w (stderr %s)", err, stderr)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%v: output %q: %v", args, out, err)
	}
	return nil
}

// runJSON is tryJSON failing the test on the command's error.
func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	if err := tryJSON(t, v, args...); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}
