package broker_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

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
