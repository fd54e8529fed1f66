package broker_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

func members(t *testing.T, g *brokertest.Group, via int) []protocol.RaftMember {
	t.Helper()
	resp := g.Invoke(via, remoting.NewRequest(remoting.ReqRaftMembers, nil, nil))
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("members via %d: %d %s", via, resp.Code, resp.Remark)
	}
	var out []protocol.RaftMember
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRaftAdminTransferRemoveAdd(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	leader := g.WaitLeader(5 * time.Second)
	// A follower answers too, once it has heard from the leader.
	g.Eventually(5*time.Second, func() error {
		ms := members(t, g, (leader+1)%3)
		leaders := 0
		for _, m := range ms {
			if m.Leader {
				leaders++
			}
			if m.RemotingAddr == "" {
				return fmt.Errorf("member %s without remoting address", m.ID)
			}
		}
		if len(ms) != 3 || leaders != 1 {
			return fmt.Errorf("members = %+v", ms)
		}
		return nil
	})

	// Transfer to a named follower, asked through the other follower
	// (forwarded to the leader).
	target, via := (leader+1)%3, (leader+2)%3
	targetID := fmt.Sprintf("n%d", target+1)
	g.Eventually(5*time.Second, func() error {
		// 14 = this follower has not heard from the leader yet; clients retry.
		resp := g.Invoke(via, remoting.NewRequest(remoting.ReqRaftTransferLeadership, map[string]string{"to": targetID}, nil))
		if resp.Code != remoting.ResSuccess {
			return fmt.Errorf("transfer: %d %s", resp.Code, resp.Remark)
		}
		return nil
	})
	g.Eventually(5*time.Second, func() error {
		if !g.Broker(target).Node().IsLeader() {
			return fmt.Errorf("%s is not leader yet", targetID)
		}
		return nil
	})

	// Unknown server: an error with a remark, not a crash.
	resp := g.Invoke(target, remoting.NewRequest(remoting.ReqRaftRemoveServer, map[string]string{"id": "nope"}, nil))
	if resp.Code == remoting.ResSuccess || resp.Remark == "" {
		t.Fatalf("remove unknown server = %d %q", resp.Code, resp.Remark)
	}
	resp = g.Invoke(target, remoting.NewRequest(remoting.ReqRaftAddVoter, map[string]string{"id": "x"}, nil))
	if resp.Code != remoting.ResSystemError {
		t.Fatalf("add voter without address = %d %q", resp.Code, resp.Remark)
	}

	// Remove a follower, then add it back.
	victim := (target + 1) % 3
	victimID := fmt.Sprintf("n%d", victim+1)
	resp = g.Invoke(target, remoting.NewRequest(remoting.ReqRaftRemoveServer, map[string]string{"id": victimID}, nil))
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("remove %s: %d %s", victimID, resp.Code, resp.Remark)
	}
	if ms := members(t, g, target); len(ms) != 2 {
		t.Fatalf("members after remove = %+v", ms)
	}
	raftAddr := g.Broker(victim).Node().Addr()
	resp = g.Invoke(target, remoting.NewRequest(remoting.ReqRaftAddVoter, map[string]string{"id": victimID, "raftAddr": raftAddr}, nil))
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("add %s back: %d %s", victimID, resp.Code, resp.Remark)
	}
	if ms := members(t, g, target); len(ms) != 3 {
		t.Fatalf("members after add = %+v", ms)
	}

	// A node that cannot be replicated to stays a non-voter: the leader
	// answers SYSTEM_BUSY, lists it as one, and it can be removed.
	resp = g.Invoke(target, remoting.NewRequest(remoting.ReqRaftAddVoter, map[string]string{"id": "ghost", "raftAddr": "127.0.0.1:1"}, nil))
	if resp.Code != remoting.ResSystemBusy || !strings.Contains(resp.Remark, "catching up") {
		t.Fatalf("add an unreachable node = %d %q, want SYSTEM_BUSY catching up", resp.Code, resp.Remark)
	}
	ms := members(t, g, target)
	if len(ms) != 4 || ms[3].ID != "ghost" || !ms[3].Nonvoter || ms[0].Nonvoter {
		t.Fatalf("members with a node catching up = %+v", ms)
	}
	resp = g.Invoke(target, remoting.NewRequest(remoting.ReqRaftRemoveServer, map[string]string{"id": "ghost"}, nil))
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("remove the non-voter: %d %s", resp.Code, resp.Remark)
	}
	if ms := members(t, g, target); len(ms) != 3 {
		t.Fatalf("members after removing the non-voter = %+v", ms)
	}
}
