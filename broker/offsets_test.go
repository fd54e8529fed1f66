package broker_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/remoting"
)

func queryOffsetReq(group, topic string, queueID int) *remoting.Command {
	return remoting.NewRequest(remoting.ReqQueryConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queueID),
	}, nil)
}

func updateOffsetReq(group, topic string, queueID int, off int64) *remoting.Command {
	return remoting.NewRequest(remoting.ReqUpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queueID), "commitOffset": strconv.FormatInt(off, 10),
	}, nil)
}

// queriedOffset is what QUERY_CONSUMER_OFFSET on node i answers: the
// offset, or an error describing another answer.
func queriedOffset(t *testing.T, g *brokertest.Group, i int, group, topic string, queueID int) (int64, error) {
	t.Helper()
	resp := g.Invoke(i, queryOffsetReq(group, topic, queueID))
	if resp.Code != remoting.ResSuccess {
		return 0, fmt.Errorf("node %d answered %d %q", i, resp.Code, resp.Remark)
	}
	return extInt(t, resp, "offset"), nil
}

func expectOffset(t *testing.T, g *brokertest.Group, i int, group, topic string, queueID int, want int64) {
	t.Helper()
	g.Eventually(5*time.Second, func() error {
		got, err := queriedOffset(t, g, i, group, topic, queueID)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("node %d: offset %d, want %d", i, got, want)
		}
		return nil
	})
}

// TestConsumerOffsets covers QUERY/UPDATE_CONSUMER_OFFSET: coalescing,
// forwarding from followers, follower reads, the commitOffset bit of a
// pull (on the leader and on a follower), and the answer for a group with
// nothing stored.
func TestConsumerOffsets(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	leader := g.WaitLeader(5 * time.Second)
	f := follower(g, leader)
	const topic = "OffsetTopic"
	createTopic(t, g, topic, 4)

	t.Run("coalesced updates", func(t *testing.T) {
		before := g.Broker(leader).Node().AppliedIndex()
		const rounds, queues = 50, 4
		for r := 1; r <= rounds; r++ {
			for q := 0; q < queues; q++ {
				resp := g.Invoke(leader, updateOffsetReq("og", topic, q, int64(r*10+q)))
				if resp.Code != remoting.ResSuccess {
					t.Fatalf("update: %d %s", resp.Code, resp.Remark)
				}
			}
		}
		for q := 0; q < queues; q++ {
			want := int64(rounds*10 + q)
			// Answered from the pending table at once, then from the
			// committed state everywhere.
			if got, err := queriedOffset(t, g, leader, "og", topic, q); err != nil || got != want {
				t.Fatalf("leader queue %d: %d %v, want %d", q, got, err, want)
			}
			expectOffset(t, g, f, "og", topic, q, want)
		}
		entries := g.Broker(leader).Node().AppliedIndex() - before
		t.Logf("%d offset updates became %d raft entries", rounds*queues, entries)
		if entries == 0 || entries > rounds*queues/10 {
			t.Fatalf("%d updates took %d raft entries, want far fewer", rounds*queues, entries)
		}
	})

	t.Run("update on a follower", func(t *testing.T) {
		resp := g.Invoke(f, updateOffsetReq("fg", topic, 2, 77))
		if resp.Code != remoting.ResSuccess {
			t.Fatalf("update on follower: %d %s", resp.Code, resp.Remark)
		}
		expectOffset(t, g, leader, "fg", topic, 2, 77)
		third := 3 - leader - f
		expectOffset(t, g, third, "fg", topic, 2, 77)
	})

	t.Run("nothing stored", func(t *testing.T) {
		// Queue 3 is empty and starts at 0: a new group starts at 0.
		if got, err := queriedOffset(t, g, leader, "newgroup", topic, 3); err != nil || got != 0 {
			t.Fatalf("empty queue: %d %v, want offset 0", got, err)
		}
		// Queue 1 starts at 0 and its first message is still stored.
		send(t, g, leader, topic, 1, "", "first")
		if got, err := queriedOffset(t, g, leader, "newgroup", topic, 1); err != nil || got != 0 {
			t.Fatalf("queue with its first message: %d %v, want offset 0", got, err)
		}
	})

	t.Run("pull commitOffset bit", func(t *testing.T) {
		send(t, g, leader, topic, 0, "", "m")
		resp := g.Invoke(leader, pullReq(pullArgs{group: "pullgroup", topic: topic, queueID: 0, sysFlag: 1, commitOffset: 1}))
		expectPull(t, resp, remoting.ResSuccess, 1)
		expectOffset(t, g, f, "pullgroup", topic, 0, 1)
		// Without the bit the offset stays: a later update's commit (which
		// flushes everything pending before it) leaves it at 1.
		g.Invoke(leader, pullReq(pullArgs{group: "pullgroup", topic: topic, queueID: 0, commitOffset: 5}))
		g.Invoke(leader, updateOffsetReq("pullgroup", topic, 3, 9))
		expectOffset(t, g, f, "pullgroup", topic, 3, 9)
		if got, err := queriedOffset(t, g, f, "pullgroup", topic, 0); err != nil || got != 1 {
			t.Fatalf("after a pull without the commit bit: %d %v, want 1", got, err)
		}
	})

	t.Run("pull commitOffset bit on a follower", func(t *testing.T) {
		// A consumer sent to a follower (follower reads) commits through
		// its pulls there: the follower forwards the offset to the leader.
		send(t, g, leader, topic, 2, "", "m")
		g.Eventually(5*time.Second, func() error {
			if got := g.Broker(f).Store().MaxOffset(topic, 2); got < 1 {
				return fmt.Errorf("follower has %d messages in queue 2", got)
			}
			return nil
		})
		resp := g.Invoke(f, pullReq(pullArgs{group: "fpullgroup", topic: topic, queueID: 2, sysFlag: 1, commitOffset: 1}))
		expectPull(t, resp, remoting.ResSuccess, 1)
		expectOffset(t, g, leader, "fpullgroup", topic, 2, 1)
		expectOffset(t, g, 3-leader-f, "fpullgroup", topic, 2, 1)
	})

	t.Run("bad headers", func(t *testing.T) {
		bad := updateOffsetReq("og", topic, 0, 1)
		bad.ExtFields["commitOffset"] = "x"
		noGroup := queryOffsetReq("", topic, 0)
		for _, req := range []*remoting.Command{bad, noGroup} {
			if resp := g.Invoke(leader, req); resp.Code != remoting.ResSystemError || resp.Remark == "" {
				t.Fatalf("%v answered %d %q", req, resp.Code, resp.Remark)
			}
		}
	})
}

// TestQueueOffsets covers GET_MAX_OFFSET, GET_MIN_OFFSET,
// SEARCH_OFFSET_BY_TIMESTAMP and GET_EARLIEST_MSG_STORETIME.
func TestQueueOffsets(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	leader := g.WaitLeader(5 * time.Second)
	const topic = "QueueOffsetTopic"
	createTopic(t, g, topic, 2)
	for i := 0; i < 4; i++ {
		send(t, g, leader, topic, 0, "", "m"+strconv.Itoa(i))
	}
	msgs := expectPull(t, g.Invoke(leader, pullReq(pullArgs{topic: topic})), remoting.ResSuccess, 4)
	ask := func(code int16, ext map[string]string, key string) int64 {
		t.Helper()
		resp := g.Invoke(leader, remoting.NewRequest(code, ext, nil))
		if resp.Code != remoting.ResSuccess {
			t.Fatalf("%s: %d %s", remoting.CodeName(code), resp.Code, resp.Remark)
		}
		return extInt(t, resp, key)
	}
	q := func(queueID int) map[string]string {
		return map[string]string{"topic": topic, "queueId": strconv.Itoa(queueID)}
	}
	if got := ask(remoting.ReqGetMaxOffset, q(0), "offset"); got != 4 {
		t.Fatalf("max offset %d, want 4", got)
	}
	if got := ask(remoting.ReqGetMinOffset, q(0), "offset"); got != 0 {
		t.Fatalf("min offset %d, want 0", got)
	}
	if got := ask(remoting.ReqGetMaxOffset, q(1), "offset"); got != 0 {
		t.Fatalf("empty queue max offset %d, want 0", got)
	}
	if got := ask(remoting.ReqGetEarliestMsgStoreTime, q(0), "timestamp"); got != msgs[0].StoreTimestamp {
		t.Fatalf("earliest store time %d, want %d", got, msgs[0].StoreTimestamp)
	}
	if got := ask(remoting.ReqGetEarliestMsgStoreTime, q(1), "timestamp"); got != -1 {
		t.Fatalf("empty queue earliest store time %d, want -1", got)
	}
	search := func(ts int64) int64 {
		ext := q(0)
		ext["timestamp"] = strconv.FormatInt(ts, 10)
		return ask(remoting.ReqSearchOffsetByTimestamp, ext, "offset")
	}
	for i, m := range msgs {
		// The first offset stored at or after m's time.
		want := int64(i)
		for want > 0 && msgs[want-1].StoreTimestamp >= m.StoreTimestamp {
			want--
		}
		if got := search(m.StoreTimestamp); got != want {
			t.Fatalf("search %d: offset %d, want %d", m.StoreTimestamp, got, want)
		}
	}
	if got := search(msgs[3].StoreTimestamp + 1); got != 4 {
		t.Fatalf("search after the last message: %d, want max offset 4", got)
	}
	if got := search(0); got != 0 {
		t.Fatalf("search before the first message: %d, want 0", got)
	}
	if resp := g.Invoke(leader, remoting.NewRequest(remoting.ReqGetMaxOffset, map[string]string{"topic": topic}, nil)); resp.Code != remoting.ResSystemError {
		t.Fatalf("GET_MAX_OFFSET without queueId answered %d", resp.Code)
	}
}

// forwardedBatch is the UPDATE_CONSUMER_OFFSET a follower forwards with
// its coalesced table.
func forwardedBatch(group, topic string, queueID int, off int64, retry bool) *remoting.Command {
	body := fmt.Sprintf(`{"offsets":[{"group":%q,"topic":%q,"queueId":%d,"offset":%d,"retry":%v}]}`, group, topic, queueID, off, retry)
	return remoting.NewRequest(remoting.ReqUpdateConsumerOffset, map[string]string{"raftmqOffsetBatch": "true"}, []byte(body))
}

// TestStaleRetriedOffsetIgnored: a follower's retry of an offset it failed
// to commit (the consumer moved on, and committed further elsewhere, say
// after a failover) must not move the committed offset backwards; a fresh
// lower commit does, as RocketMQ allows.
func TestStaleRetriedOffsetIgnored(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	leader := g.WaitLeader(5 * time.Second)
	const topic = "StaleOffsets"
	createTopic(t, g, topic, 1)
	mustSucceed(t, g.Invoke(leader, forwardedBatch("sg", topic, 0, 40, false)), "fresh batch")
	expectOffset(t, g, leader, "sg", topic, 0, 40)
	mustSucceed(t, g.Invoke(leader, forwardedBatch("sg", topic, 0, 25, true)), "stale retried batch")
	if got, err := queriedOffset(t, g, leader, "sg", topic, 0); err != nil || got != 40 {
		t.Fatalf("after a stale retried batch: offset %d, %v; want 40", got, err)
	}
	mustSucceed(t, g.Invoke(leader, forwardedBatch("sg", topic, 0, 41, true)), "newer retried batch")
	expectOffset(t, g, leader, "sg", topic, 0, 41)
	mustSucceed(t, g.Invoke(leader, forwardedBatch("sg", topic, 0, 30, false)), "fresh lower batch")
	expectOffset(t, g, leader, "sg", topic, 0, 30)
	// A retried value for a key with nothing committed is applied.
	mustSucceed(t, g.Invoke(leader, forwardedBatch("sg2", topic, 0, 7, true)), "first retried batch")
	expectOffset(t, g, leader, "sg2", topic, 0, 7)
}
