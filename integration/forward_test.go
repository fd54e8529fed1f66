package integration

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// TestForwardFollowsNewLeaderWhileOldIsPaused: a send reaches a follower
// just as the leader's process is frozen (SIGSTOP: sockets open, no
// answers). The follower forwards it to the leader it knows; once it sees
// another leader elected it forwards again there (or serves it itself)
// instead of waiting out the frozen one, so the send is stored and
// answered within the election, not refused after the forward timeout.
func TestForwardFollowsNewLeaderWhileOldIsPaused(t *testing.T) {
	c := startCluster(t)
	createTopicOn(t, c, "FwdPause", 4)
	leader := c.waitLeader(5 * time.Second)
	follower := (leader + 1) % 3
	p := c.nodes[leader].p.cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Signal(syscall.SIGCONT) })

	req := remoting.NewRequest(remoting.ReqSendMessage, map[string]string{"producerGroup": "pg", "topic": "FwdPause",
		"defaultTopic": protocol.DefaultTopic, "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
		"bornTimestamp": "0", "flag": "0", "reconsumeTimes": "0", "unitMode": "false", "batch": "false"}, []byte("x"))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := c.invoke(ctx, c.nodes[follower].addr, req)
	if err != nil {
		t.Fatalf("send through follower n%d with the leader frozen: %v", follower+1, err)
	}
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("send through follower n%d with the leader frozen after %v: %d %s", follower+1, time.Since(start), resp.Code, resp.Remark)
	}
	t.Logf("stored through follower n%d %v after freezing leader n%d (queue offset %s)", follower+1, time.Since(start), leader+1, resp.ExtFields["queueOffset"])
}
