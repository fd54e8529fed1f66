package broker_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

func dedupeGroup(t *testing.T, window time.Duration) (*brokertest.Group, int) {
	return startGroup(t, brokertest.Options{Configure: func(_ int, c *broker.Config) { c.DedupeWindow = window }})
}

// uniqSend is a SEND_MESSAGE carrying a unique key, as a client retry
// re-sends it.
func uniqSend(topic string, queueID int, uniq, body string) *remoting.Command {
	return sendMsgReq(topic, queueID, map[string]string{message.PropertyUniqKey: uniq}, []byte(body))
}

// sendAnswer is what a send answer identifies.
type sendAnswer struct{ msgID, queueID, queueOffset, duplicate string }

func answerOf(t *testing.T, resp *remoting.Command, what string) sendAnswer {
	t.Helper()
	mustSucceed(t, resp, what)
	return sendAnswer{resp.ExtFields["msgId"], resp.ExtFields["queueId"], resp.ExtFields["queueOffset"], resp.ExtFields["raftmqDuplicate"]}
}

func sameSend(a, b sendAnswer) bool {
	return a.msgID == b.msgID && a.queueID == b.queueID && a.queueOffset == b.queueOffset
}

func TestDedupeRetriedSend(t *testing.T) {
	g, leader := dedupeGroup(t, time.Minute)
	createTopicAt(t, g, leader, "dd", 2, 6)
	uniq := fmt.Sprintf("%032X", 1)
	first := answerOf(t, g.Invoke(leader, uniqSend("dd", 1, uniq, "once")), "first send")
	if first.duplicate != "" {
		t.Fatalf("first send answered as a duplicate: %+v", first)
	}
	// The retry, to the leader and forwarded by a follower, and one with
	// another queue chosen: all answered with the first send's result.
	for _, c := range []struct {
		node  int
		queue int
	}{{leader, 1}, {follower(g, leader), 1}, {leader, 0}} {
		again := answerOf(t, g.Invoke(c.node, uniqSend("dd", c.queue, uniq, "once")), "retry")
		if !sameSend(first, again) || again.duplicate != "true" {
			t.Fatalf("retry via node %d queue %d answered %+v, first send %+v", c.node, c.queue, again, first)
		}
	}
	// Another key, another topic or a consumer's next send-back of the
	// same message (reconsumeTimes 1) are new messages.
	other := answerOf(t, g.Invoke(leader, uniqSend("dd", 1, fmt.Sprintf("%032X", 2), "two")), "other key")
	resend := uniqSend("dd", 1, uniq, "reconsumed")
	resend.ExtFields["reconsumeTimes"] = "1"
	reconsumed := answerOf(t, g.Invoke(leader, resend), "send with reconsumeTimes 1")
	if other.duplicate != "" || reconsumed.duplicate != "" || sameSend(first, reconsumed) {
		t.Fatalf("new messages answered as duplicates: %+v %+v", other, reconsumed)
	}
	createTopicAt(t, g, leader, "dd2", 1, 6)
	if a := answerOf(t, g.Invoke(leader, uniqSend("dd2", 0, uniq, "elsewhere")), "same key, other topic"); a.duplicate != "" {
		t.Fatalf("same key in another topic answered as duplicate: %+v", a)
	}
	for i := 0; i < g.Len(); i++ {
		g.Eventually(5*time.Second, func() error {
			if got := pullAll(t, g, i, "dd", 1); len(got) != 3 {
				return fmt.Errorf("node %d holds %d messages in dd/1, want 3", i, len(got))
			}
			if got := pullAll(t, g, i, "dd", 0); len(got) != 0 {
				return fmt.Errorf("node %d holds %d messages in dd/0, want 0", i, len(got))
			}
			return nil
		})
	}
	info := g.Invoke(leader, remoting.NewRequest(remoting.ReqGetBrokerRuntimeInfo, nil, nil))
	mustSucceed(t, info, "runtime info")
	if !strings.Contains(string(info.Body), `"msgPutDuplicates":"3"`) {
		t.Errorf("runtime info does not count 3 duplicates: %s", info.Body)
	}
}

func TestDedupeConcurrentDuplicates(t *testing.T) {
	g, leader := dedupeGroup(t, time.Minute)
	createTopicAt(t, g, leader, "cc", 1, 6)
	const n = 16
	answers := make([]sendAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half through a follower, as producers spread over the group.
			node := leader
			if i%2 == 1 {
				node = follower(g, leader)
			}
			answers[i] = answerOf(t, g.Invoke(node, uniqSend("cc", 0, fmt.Sprintf("%032X", 7), "x")), "concurrent send")
		}()
	}
	wg.Wait()
	dups := 0
	for _, a := range answers {
		if !sameSend(a, answers[0]) {
			t.Fatalf("concurrent sends of one key answered differently: %+v vs %+v", a, answers[0])
		}
		if a.duplicate == "true" {
			dups++
		}
	}
	if dups != n-1 {
		t.Errorf("%d of %d sends answered as duplicates, want %d", dups, n, n-1)
	}
	g.WaitApplied(10 * time.Second) // acknowledged at a majority, counted once applied
	if got := maxOffsetOf(t, g, leader, "cc", 0); got != 1 {
		t.Fatalf("%d messages stored for one key", got)
	}
}

func TestDedupeBatch(t *testing.T) {
	g, leader := dedupeGroup(t, time.Minute)
	createTopicAt(t, g, leader, "bb", 1, 6)
	batch := func(keys ...int) *remoting.Command {
		var inner []*message.Message
		for _, k := range keys {
			im := &message.Message{Topic: "bb", Body: []byte("b" + strconv.Itoa(k))}
			im.SetUniqKey(fmt.Sprintf("%032X", 500+k))
			inner = append(inner, im)
		}
		body, err := message.EncodeBatch(inner)
		if err != nil {
			t.Fatal(err)
		}
		ext := sendHeaderExt("bb", 0, nil)
		ext["batch"] = "true"
		return v2Req(remoting.ReqSendBatchMessage, ext, body)
	}
	first := answerOf(t, g.Invoke(leader, batch(1, 2, 3)), "batch")
	again := answerOf(t, g.Invoke(follower(g, leader), batch(1, 2, 3)), "batch retry")
	if !sameSend(first, again) || again.duplicate != "true" || len(strings.Split(again.msgID, ",")) != 3 {
		t.Fatalf("batch retry answered %+v, first %+v", again, first)
	}
	// A batch with one new message is stored whole.
	mixed := answerOf(t, g.Invoke(leader, batch(3, 4)), "mixed batch")
	if mixed.duplicate != "" || mixed.queueOffset != "3" {
		t.Fatalf("batch with a new key answered %+v", mixed)
	}
	g.WaitApplied(10 * time.Second) // acknowledged at a majority, counted once applied
	if got := maxOffsetOf(t, g, leader, "bb", 0); got != 5 {
		t.Fatalf("%d messages stored, want 5", got)
	}
}

func TestDedupeAcrossFailover(t *testing.T) {
	g, leader := dedupeGroup(t, time.Minute)
	createTopicAt(t, g, leader, "fo", 1, 6)
	uniq := fmt.Sprintf("%032X", 9)
	first := answerOf(t, g.Invoke(leader, uniqSend("fo", 0, uniq, "before")), "send")
	g.StopNode(leader)
	nl := g.WaitLeader(10 * time.Second)
	var again sendAnswer
	g.Eventually(10*time.Second, func() error {
		resp := g.Invoke(nl, uniqSend("fo", 0, uniq, "before"))
		if resp.Code != remoting.ResSuccess {
			return fmt.Errorf("retry: %d %s", resp.Code, resp.Remark)
		}
		again = answerOf(t, resp, "retry after failover")
		return nil
	})
	if !sameSend(first, again) || again.duplicate != "true" {
		t.Fatalf("retry on the new leader answered %+v, first %+v", again, first)
	}
	g.WaitApplied(10 * time.Second) // acknowledged at a majority, counted once applied
	if got := maxOffsetOf(t, g, nl, "fo", 0); got != 1 {
		t.Fatalf("new leader holds %d messages for one key", got)
	}
}

func TestDedupeWindowEnds(t *testing.T) {
	const window = 1500 * time.Millisecond
	g, leader := dedupeGroup(t, window)
	createTopicAt(t, g, leader, "we", 1, 6)
	uniq := fmt.Sprintf("%032X", 11)
	start := time.Now()
	first := answerOf(t, g.Invoke(leader, uniqSend("we", 0, uniq, "x")), "send")
	// Retry until the window has passed: every retry inside it is a
	// duplicate, the first one after it is stored.
	var stored sendAnswer
	g.Eventually(10*time.Second, func() error {
		a := answerOf(t, g.Invoke(leader, uniqSend("we", 0, uniq, "x")), "retry")
		if a.duplicate == "true" {
			if !sameSend(a, first) {
				t.Fatalf("duplicate answered %+v, first %+v", a, first)
			}
			return fmt.Errorf("still inside the window")
		}
		stored = a
		return nil
	})
	if elapsed := time.Since(start); elapsed < window {
		t.Fatalf("stored again after %v, inside the %v window", elapsed, window)
	}
	if stored.queueOffset != "1" {
		t.Fatalf("send after the window answered %+v", stored)
	}
}

func TestDedupeOff(t *testing.T) {
	g, leader := dedupeGroup(t, 0)
	createTopicAt(t, g, leader, "off", 1, 6)
	for i := 0; i < 2; i++ {
		if a := answerOf(t, g.Invoke(leader, uniqSend("off", 0, fmt.Sprintf("%032X", 3), "x")), "send"); a.duplicate != "" {
			t.Fatalf("dedupe off: answered as duplicate %+v", a)
		}
	}
	g.WaitApplied(10 * time.Second) // acknowledged at a majority, counted once applied
	if got := maxOffsetOf(t, g, leader, "off", 0); got != 2 {
		t.Fatalf("dedupe off: %d messages stored, want 2", got)
	}
}
