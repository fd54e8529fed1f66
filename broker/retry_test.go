package broker_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

func sendBackReq(group string, m *message.MessageExt, delayLevel int, maxTimes string) *remoting.Command {
	ext := map[string]string{
		"group": group, "offset": strconv.FormatInt(m.CommitLogOffset, 10), "delayLevel": strconv.Itoa(delayLevel),
		"originMsgId": m.UniqKey(), "originTopic": m.Topic, "unitMode": "false",
	}
	if maxTimes != "" {
		ext["maxReconsumeTimes"] = maxTimes
	}
	return remoting.NewRequest(remoting.ReqConsumerSendMsgBack, ext, nil)
}

// nextIn waits until queue 0 of topic has a message at offset and returns it.
func nextIn(t *testing.T, g *brokertest.Group, node int, topic string, offset int64, within time.Duration) *message.MessageExt {
	t.Helper()
	var got *message.MessageExt
	g.Eventually(within, func() error {
		resp := g.Invoke(node, pullReq(pullArgs{topic: topic, offset: offset, max: 1}))
		if resp.Code != remoting.ResSuccess {
			return fmt.Errorf("%s@%d: pull answered %d %s", topic, offset, resp.Code, resp.Remark)
		}
		msgs, err := message.DecodeExts(resp.Body)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("pull %s@%d: %d messages, %v", topic, offset, len(msgs), err)
		}
		got = msgs[0]
		return nil
	})
	return got
}

// makeReadable grants read on a DLQ topic, as an operator does to drain it.
func makeReadable(t *testing.T, g *brokertest.Group, node int, topic string) {
	t.Helper()
	createTopicAt(t, g, node, topic, 1, 6)
}

func TestSendBackRetriesAfterLevelDelay(t *testing.T) {
	g := delayGroup(t, testDelayLevels)
	leader := g.WaitLeader(5 * time.Second)
	fol := follower(g, leader)
	createTopicAt(t, g, leader, "orig", 1, 6)
	sendParked(t, g, leader, "orig", 0, map[string]string{"k": "v"}, "payload")
	first := nextIn(t, g, leader, "orig", 0, 3*time.Second)
	start := time.Now().UnixMilli()
	mustSucceed(t, g.Invoke(fol, sendBackReq("rg", first, 0, "16")), "send back via follower")
	retry := protocol.RetryTopic("rg")
	if n := maxOffsetOf(t, g, leader, retry, 0); n != 0 {
		t.Fatalf("retry visible before its level-3 delay: max offset %d", n)
	}
	got := nextIn(t, g, leader, retry, 0, 3*time.Second)
	if got.StoreTimestamp < start+300 {
		t.Fatalf("retry delivered %d ms after send-back, level 3 is 300 ms", got.StoreTimestamp-start)
	}
	t.Logf("retry delivered %d ms after the send-back (level 3 = 300 ms)", got.StoreTimestamp-start)
	if got.ReconsumeTimes != 1 || got.Property(message.PropertyRetryTopic) != "orig" ||
		got.Property(message.PropertyOriginMessageID) != first.MsgID() || got.UniqKey() != first.UniqKey() ||
		string(got.Body) != "payload" || got.Property("k") != "v" || got.Property(message.PropertyDelayLevel) != "" {
		t.Fatalf("retry copy: reconsume %d props %v body %q", got.ReconsumeTimes, got.Properties, got.Body)
	}
	// Bad requests name what is wrong.
	for _, req := range []*remoting.Command{
		remoting.NewRequest(remoting.ReqConsumerSendMsgBack, map[string]string{"group": "rg", "offset": "x"}, nil),
		remoting.NewRequest(remoting.ReqConsumerSendMsgBack, map[string]string{"offset": "0"}, nil),
		remoting.NewRequest(remoting.ReqConsumerSendMsgBack, map[string]string{"group": "rg", "offset": "999999999"}, nil),
	} {
		if resp := g.Invoke(leader, req); resp.Code != remoting.ResSystemError || resp.Remark == "" {
			t.Fatalf("bad send-back %v: %d %q", req.ExtFields, resp.Code, resp.Remark)
		}
	}
}

// testFastLevels make every level 20 ms, so 16 retries take little time.
const testFastLevels = "20ms 20ms 20ms 20ms 20ms 20ms 20ms 20ms 20ms 20ms 20ms 20ms 20ms 20ms 20ms 20ms 20ms 20ms"

func TestSendBackSixteenTimesThenDLQ(t *testing.T) {
	g := delayGroup(t, testFastLevels)
	leader := g.WaitLeader(5 * time.Second)
	createTopicAt(t, g, leader, "orig", 1, 6)
	sendParked(t, g, leader, "orig", 0, nil, "doomed")
	first := nextIn(t, g, leader, "orig", 0, 3*time.Second)
	retry, dlq := protocol.RetryTopic("dg"), protocol.DLQTopic("dg")
	cur := first
	for i := 0; i < 16; i++ { // consumed and failed: the original and 15 retries
		mustSucceed(t, g.Invoke(leader, sendBackReq("dg", cur, 0, "")), "send back "+strconv.Itoa(i))
		cur = nextIn(t, g, leader, retry, int64(i), 3*time.Second)
		if cur.ReconsumeTimes != int32(i+1) {
			t.Fatalf("retry %d has reconsumeTimes %d", i, cur.ReconsumeTimes)
		}
	}
	// The 16th retry fails too: budget spent, dead letter.
	mustSucceed(t, g.Invoke(leader, sendBackReq("dg", cur, 0, "")), "send back 16")
	tc, ok := g.Broker(leader).Metadata().Topic(dlq)
	if !ok || tc.Perm != protocol.PermWrite {
		t.Fatalf("DLQ topic %+v (exists %v), want perm WRITE only", tc, ok)
	}
	if resp := g.Invoke(leader, pullReq(pullArgs{topic: dlq})); resp.Code != remoting.ResNoPermission {
		t.Fatalf("pulling the DLQ answered %d, want NO_PERMISSION", resp.Code)
	}
	makeReadable(t, g, leader, dlq)
	dead := nextIn(t, g, leader, dlq, 0, 3*time.Second)
	if dead.ReconsumeTimes != 17 || dead.Property(message.PropertyRetryTopic) != "orig" ||
		dead.Property(message.PropertyOriginMessageID) != first.MsgID() || dead.UniqKey() != first.UniqKey() ||
		dead.Property(message.PropertyDelayLevel) != "" || string(dead.Body) != "doomed" {
		t.Fatalf("dead letter: reconsume %d props %v", dead.ReconsumeTimes, dead.Properties)
	}
	// The dead letter must not also be in the retry topic.
	if n := maxOffsetOf(t, g, leader, retry, 0); n != 16 {
		t.Fatalf("retry topic holds %d copies, want 16", n)
	}
	// delayLevel -1 sends straight to the DLQ.
	mustSucceed(t, g.Invoke(leader, sendBackReq("dg", first, -1, "")), "send back -1")
	if d := nextIn(t, g, leader, dlq, 1, 3*time.Second); d.ReconsumeTimes != 1 || d.UniqKey() != first.UniqKey() {
		t.Fatalf("delayLevel -1 copy: reconsume %d", d.ReconsumeTimes)
	}
	// A client's own re-send to %RETRY% over budget lands in the DLQ too.
	ext := sendHeaderExt(retry, 0, map[string]string{message.PropertyUniqKey: "fallback", message.PropertyDelayLevel: "3"})
	ext["reconsumeTimes"], ext["maxReconsumeTimes"] = "16", "16"
	mustSucceed(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqSendMessage, ext, []byte("fb"))), "fallback re-send")
	if d := nextIn(t, g, leader, dlq, 2, 3*time.Second); d.UniqKey() != "fallback" || d.Property(message.PropertyDelayLevel) != "" {
		t.Fatalf("fallback re-send: %v", d.Properties)
	}
	// Under budget, the re-send goes through its delay to %RETRY%.
	ext = sendHeaderExt(retry, 0, map[string]string{message.PropertyUniqKey: "fallback2", message.PropertyDelayLevel: "3"})
	ext["reconsumeTimes"], ext["maxReconsumeTimes"] = "2", "16"
	mustSucceed(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqSendMessage, ext, []byte("fb2"))), "fallback re-send 2")
	if d := nextIn(t, g, leader, retry, 16, 3*time.Second); d.UniqKey() != "fallback2" {
		t.Fatalf("under-budget re-send: %v", d.Properties)
	}
}
