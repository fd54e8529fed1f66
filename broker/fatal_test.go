package broker_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/internal/vfs"
)

// TestFailedFsyncStopsServing: a node whose commitlog fsync failed
// refuses writes until reopened, so it must not run on looking alive:
// Serve returns the cause (the process exits non-zero and its supervisor
// restarts it) and /healthz answers 503. The rest of the group serves on.
func TestFailedFsyncStopsServing(t *testing.T) {
	faults := make([]*vfs.FaultFS, 3)
	for i := range faults {
		faults[i] = vfs.NewFaultFS(vfs.OS)
	}
	g, leader := startGroup(t, brokertest.Options{Configure: func(i int, c *broker.Config) {
		c.Store.CommitLog.FS = faults[i]
	}})
	createTopicAt(t, g, leader, "fs", 1, 6)
	f := follower(g, leader)
	faults[f].Inject(vfs.FailOnce(vfs.OpSync, ".log", vfs.ErrInjected))
	send(t, g, leader, "fs", 0, "", "after the fault") // the leader and the other follower are a majority
	err, exited := g.WaitServeExit(f, 10*time.Second)
	if !exited || err == nil || !strings.Contains(err.Error(), "commitlog failed") {
		t.Fatalf("node %d after a failed fsync: Serve exited %v with %v", f, exited, err)
	}
	rec := httptest.NewRecorder()
	g.Broker(f).HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "commitlog") {
		t.Fatalf("/healthz of the failed node: %d %q", rec.Code, rec.Body.String())
	}
	if _, exited := g.WaitServeExit(leader, 0); exited {
		t.Fatal("the healthy leader stopped serving")
	}
	send(t, g, leader, "fs", 0, "", "still served")
	// A restart reopens and scans the log; the node catches up.
	faults[f].Inject(nil)
	g.StopNode(f)
	g.StartNode(f)
	g.Eventually(10*time.Second, func() error {
		if got := pullAll(t, g, f, "fs", 0); len(got) != 2 {
			return fmt.Errorf("restarted node holds %d messages, want 2", len(got))
		}
		return nil
	})
}
