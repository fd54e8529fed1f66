package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/protocol"
)

// TestClusterListStatusAndBrokerConfig: cluster list/status show every
// node with one leader; broker-config get reads settings on every node,
// set changes the replicated brokerPermission and refuses other keys by
// name; raft members and snapshot answer per node.
func TestClusterListStatusAndBrokerConfig(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	g.WaitLeader(10 * time.Second)
	ns := g.NSAddr
	var rows []nodeRow
	g.Eventually(10*time.Second, func() error {
		rows = nil
		if err := tryJSON(t, &rows, "cluster", "list", "-n", ns); err != nil {
			return err
		}
		if len(rows) != 3 || rows[0].Role == "" {
			return fmt.Errorf("%d rows: %+v", len(rows), rows)
		}
		return nil
	})
	leaders := 0
	for _, r := range rows {
		if r.Role == "Leader" {
			leaders++
		}
		if r.BrokerName != "broker-a" || r.Version == "" || r.Error != "" || r.Cluster == "" || r.NodeID == "" {
			t.Errorf("cluster list row %+v", r)
		}
	}
	if leaders != 1 {
		t.Fatalf("cluster list: %d leaders in %+v", leaders, rows)
	}
	var status []nodeRow
	if err := tryJSON(t, &status, "raft", "status", "-n", ns); err != nil || len(status) != 3 {
		t.Fatalf("raft status: %v %+v", err, status)
	}
	for _, r := range status {
		if r.Lag < 0 || r.Term < 1 || r.Applied < 1 {
			t.Errorf("status row %+v", r)
		}
	}
	out, _, err := run(t, "cluster", "status", "-n", ns)
	if err != nil || !strings.Contains(out, "Leader") || strings.Count(out, "broker-a") != 3 {
		t.Fatalf("cluster status table: %v\n%s", err, out)
	}

	var cfgs []nodeConfig
	if err := tryJSON(t, &cfgs, "cluster", "broker-config", "get", "-n", ns, "-b", "broker-a", "-k", "brokerPermission"); err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 3 || cfgs[0].Settings["brokerPermission"] != "6" || len(cfgs[0].Settings) != 1 {
		t.Fatalf("broker-config get: %+v", cfgs)
	}
	if _, _, err := run(t, "cluster", "broker-config", "set", "-n", ns, "-b", "broker-a", "brokerPermission=4"); err != nil {
		t.Fatal(err)
	}
	g.Eventually(10*time.Second, func() error {
		cfgs = nil
		if err := tryJSON(t, &cfgs, "cluster", "broker-config", "get", "-n", ns, "-k", "brokerPermission"); err != nil {
			return err
		}
		for _, c := range cfgs {
			if c.Settings["brokerPermission"] != "4" {
				return fmt.Errorf("%s: brokerPermission %q", c.Addr, c.Settings["brokerPermission"])
			}
		}
		return nil
	})
	_, _, err = run(t, "cluster", "broker-config", "set", "-n", ns, "brokerPermission=6", "maxMessageSize=1")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Addr == "" || !strings.Contains(ce.Remark, "maxMessageSize") {
		t.Fatalf("setting maxMessageSize at run time: %v", err)
	}
	if _, _, err := run(t, "cluster", "broker-config", "set", "-n", ns, "brokerPermission"); err == nil || !strings.Contains(err.Error(), "key=value") {
		t.Fatalf("bad argument: %v", err)
	}
	if _, _, err := run(t, "cluster", "broker-config", "get", "-n", ns, "-k", "noSuchKey"); err == nil || !strings.Contains(err.Error(), "noSuchKey") {
		t.Fatalf("unknown key: %v", err)
	}

	var members []protocol.RaftMember
	if err := tryJSON(t, &members, "raft", "members", "-n", ns); err != nil || len(members) != 3 {
		t.Fatalf("raft members: %v %+v", err, members)
	}
	var snaps []client.Snapshot
	if err := tryJSON(t, &snaps, "raft", "snapshot", "-n", ns); err != nil || len(snaps) != 3 {
		t.Fatalf("raft snapshot: %v %+v", err, snaps)
	}
	for _, s := range snaps {
		if !s.Fresh || s.Index < 1 || s.Term < 1 || s.NodeID == "" {
			t.Errorf("snapshot %+v", s)
		}
	}
	// A second snapshot of one node covers at least what the first did.
	var again []client.Snapshot
	if err := tryJSON(t, &again, "raft", "snapshot", "-n", ns, "--addr", snaps[0].Addr); err != nil || len(again) != 1 {
		t.Fatalf("second snapshot: %v %+v", err, again)
	}
	if again[0].Index < snaps[0].Index || again[0].NodeID != snaps[0].NodeID {
		t.Fatalf("second snapshot %+v after %+v", again[0], snaps[0])
	}
}
