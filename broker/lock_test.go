package broker_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/remoting"
)

type testMQ struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

func lockReq(code int16, group, client string, queues ...int) *remoting.Command {
	mqs := []testMQ{}
	for _, q := range queues {
		mqs = append(mqs, testMQ{"ordered", "broker-a", q})
	}
	body, _ := json.Marshal(map[string]any{"consumerGroup": group, "clientId": client, "mqSet": mqs})
	return remoting.NewRequest(code, nil, body)
}

// lockOn asks node i to lock queues for client and returns the granted ids.
func lockOn(t *testing.T, g *brokertest.Group, i int, client string, queues ...int) []int {
	t.Helper()
	resp := g.Invoke(i, lockReq(remoting.ReqLockBatchMQ, "og", client, queues...))
	mustSucceed(t, resp, "lock batch")
	var out struct {
		LockOKMQSet []testMQ `json:"lockOKMQSet"`
	}
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatalf("lock answer %q: %v", resp.Body, err)
	}
	ids := []int{}
	for _, mq := range out.LockOKMQSet {
		if mq.Topic != "ordered" || mq.BrokerName != "broker-a" {
			t.Fatalf("lock answer names %+v", mq)
		}
		ids = append(ids, mq.QueueID)
	}
	return ids
}

func sameInts(a []int, b ...int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestQueueLocks(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{Configure: func(_ int, c *broker.Config) { c.LockExpiry = 400 * time.Millisecond }})
	leader := g.WaitLeader(5 * time.Second)
	fol := follower(g, leader)
	if got := lockOn(t, g, leader, "A", 0, 1); !sameInts(got, 0, 1) {
		t.Fatalf("A locks free queues 0,1: granted %v", got)
	}
	// Through a follower: forwarded to the leader's lock table.
	if got := lockOn(t, g, fol, "B", 1, 2); !sameInts(got, 2) {
		t.Fatalf("B via follower asks 1,2 while A holds 1: granted %v, want [2]", got)
	}
	if got := lockOn(t, g, leader, "A", 0, 1, 2); !sameInts(got, 0, 1) {
		t.Fatalf("A renews 0,1 and asks 2 held by B: granted %v", got)
	}
	mustSucceed(t, g.Invoke(fol, lockReq(remoting.ReqUnlockBatchMQ, "og", "B", 2)), "unlock via follower")
	mustSucceed(t, g.Invoke(leader, lockReq(remoting.ReqUnlockBatchMQ, "og", "B", 0)), "unlocking another's lock is a no-op")
	if got := lockOn(t, g, leader, "C", 0, 2); !sameInts(got, 2) {
		t.Fatalf("C after B unlocked 2 (A still holds 0): granted %v", got)
	}
	// Expiry: A stops renewing; C takes 0 once A's lock is older than 400 ms.
	deadline := time.Now().Add(300 * time.Millisecond)
	if got := lockOn(t, g, leader, "C", 0); len(got) != 0 && time.Now().Before(deadline) {
		t.Fatalf("C took A's unexpired lock: %v", got)
	}
	g.Eventually(3*time.Second, func() error {
		if got := lockOn(t, g, leader, "C", 0); !sameInts(got, 0) {
			return errString("A's lock on 0 has not expired yet")
		}
		return nil
	})
	if resp := g.Invoke(leader, remoting.NewRequest(remoting.ReqLockBatchMQ, nil, []byte("{"))); resp.Code != remoting.ResSystemError || resp.Remark == "" {
		t.Fatalf("bad body: %d %q", resp.Code, resp.Remark)
	}
	// Locks are leader-local: after a failover D locks what C held.
	lockOn(t, g, leader, "C", 0, 1, 2)
	g.StopNode(leader)
	next := g.WaitLeader(10 * time.Second)
	if got := lockOn(t, g, next, "D", 0, 1, 2); !sameInts(got, 0, 1, 2) {
		t.Fatalf("D on the new leader: granted %v, want all", got)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
