package broker_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/remoting"
)

// TestRuntimeInfoDiskKeys: GET_BROKER_RUNTIME_INFO reports the commitlog's
// disk use as its file system reports it (here a simulated one): the
// usage ratio, the free bytes, and whether the node refuses writes, which
// turns true once the usage passes the refuse ratio.
func TestRuntimeInfoDiskKeys(t *testing.T) {
	var disks diskGauges
	opts := disks.options()
	configure := opts.Configure
	opts.Configure = func(i int, c *broker.Config) {
		configure(i, c)
		c.Store.CommitLog.Retention.MinFreeBytes = 0
		c.Store.CommitLog.Retention.FreeBytes = func(string) (int64, error) { return 5 << 30, nil }
	}
	disks.set(1, 0.4213)
	g, _ := startGroup(t, opts)
	table := func(i int) map[string]string {
		resp := g.Invoke(i, remoting.NewRequest(remoting.ReqGetBrokerRuntimeInfo, nil, nil))
		mustSucceed(t, resp, "runtime info")
		var kv struct {
			Table map[string]string `json:"table"`
		}
		if err := json.Unmarshal(resp.Body, &kv); err != nil {
			t.Fatal(err)
		}
		return kv.Table
	}
	got := table(1)
	if got["commitLogDiskRatio"] != "0.4213" || got["commitLogDiskFreeBytes"] != fmt.Sprint(5<<30) || got["commitLogDiskFull"] != "false" {
		t.Fatalf("node 1 disk keys: ratio %q free %q full %q", got["commitLogDiskRatio"], got["commitLogDiskFreeBytes"], got["commitLogDiskFull"])
	}
	if r := table(0)["commitLogDiskRatio"]; r != "0.1000" {
		t.Fatalf("node 0 commitLogDiskRatio = %q, want 0.1000", r)
	}
	disks.set(1, 0.95)
	g.Eventually(5*time.Second, func() error {
		if got := table(1); got["commitLogDiskFull"] != "true" || got["commitLogDiskRatio"] != "0.9500" {
			return fmt.Errorf("node 1 at 95%%: full %q ratio %q", got["commitLogDiskFull"], got["commitLogDiskRatio"])
		}
		return nil
	})
}
