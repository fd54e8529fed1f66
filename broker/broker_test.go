package broker_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/remoting"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestGroupStartsAndAnswersUnknownCodes(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	leader := g.WaitLeader(5 * time.Second)
	for i := 0; i < g.Len(); i++ {
		resp := g.Invoke(i, remoting.NewRequest(9999, nil, nil))
		if resp.Code != remoting.ResRequestCodeNotSupported || resp.Remark == "" {
			t.Fatalf("node %d: unknown code answered %d %q", i, resp.Code, resp.Remark)
		}
	}
	// A restart of the leader elects a leader again.
	g.StopNode(leader)
	g.WaitLeader(5 * time.Second)
	g.StartNode(leader)
}

// TestRefusesFormat1DataDir: a data directory laid out by a raftmq from
// before the store/metadata split is refused at once, by name, instead of
// starting a node that can never elect a leader.
func TestRefusesFormat1DataDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "raft", "commitlog"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := broker.DefaultConfig()
	cfg.DataDir, cfg.NodeID = dir, "n1"
	cfg.Peers = []broker.Peer{{ID: "n1", RaftAddr: "127.0.0.1:1", RemotingAddr: "127.0.0.1:2"}}
	_, err := broker.New(cfg)
	if !errors.Is(err, broker.ErrOldDataDir) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("New on a format-1 directory: %v, want ErrOldDataDir naming it", err)
	}
}
