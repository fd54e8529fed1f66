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
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wallclock"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// testDelayLevels are short levels: level n waits n×100 ms.
const testDelayLevels = "100ms 200ms 300ms 400ms 500ms 600ms 700ms 800ms 900ms 1s 1100ms 1200ms 1300ms 1400ms 1500ms 1600ms 1700ms 1800ms"

func delayGroup(t *testing.T, levels string) *brokertest.Group {
	return brokertest.Start(t, brokertest.Options{Configure: func(_ int, c *broker.Config) {
		c.MessageDelayLevel = levels
		c.AutoCreateTopic = true
	}})
}

func TestParseDelayLevels(t *testing.T) {
	got, err := broker.ParseDelayLevels(broker.DefaultMessageDelayLevel)
	if err != nil || len(got) != 18 || got[0] != time.Second || got[17] != 2*time.Hour {
		t.Fatalf("default levels: %v %v", got, err)
	}
	if got, err := broker.ParseDelayLevels("250ms 2d"); err != nil || got[1] != 48*time.Hour {
		t.Fatalf("ms and d units: %v %v", got, err)
	}
	for _, bad := range []string{"", "1s x", "0s", "-1s", "8d", "1s 5"} {
		if _, err := broker.ParseDelayLevels(bad); err == nil {
			t.Errorf("ParseDelayLevels(%q) accepted", bad)
		}
	}
	c := broker.DefaultConfig()
	c.MessageDelayLevel = "nope"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "MessageDelayLevel") {
		t.Fatalf("Validate with bad levels: %v", err)
	}
}

// sendParked sends one message with extra properties (DELAY or timer ones)
// through node i and returns its UNIQ_KEY.
func sendParked(t *testing.T, g *brokertest.Group, i int, topic string, queueID int, props map[string]string, body string) string {
	t.Helper()
	key := fmt.Sprintf("%s-%d-%s", topic, queueID, body)
	p := map[string]string{message.PropertyUniqKey: key, message.PropertyTags: "tg"}
	for k, v := range props {
		p[k] = v
	}
	mustSucceed(t, g.Invoke(i, sendMsgReq(topic, queueID, p, []byte(body))), "send "+key)
	return key
}

func maxOffsetOf(t *testing.T, g *brokertest.Group, i int, topic string, queueID int) int64 {
	t.Helper()
	resp := g.Invoke(i, remoting.NewRequest(remoting.ReqGetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(queueID)}, nil))
	mustSucceed(t, resp, "get max offset")
	return extInt(t, resp, "offset")
}

// pullAll pulls every message of a queue from node i.
func pullAll(t *testing.T, g *brokertest.Group, i int, topic string, queueID int) []*message.MessageExt {
	t.Helper()
	var out []*message.MessageExt
	for off := int64(0); ; {
		resp := g.Invoke(i, pullReq(pullArgs{topic: topic, queueID: queueID, offset: off}))
		if resp.Code != remoting.ResSuccess {
			return out
		}
		msgs, err := message.DecodeExts(resp.Body)
		if err != nil {
			t.Fatalf("decoding pull of %s/%d: %v", topic, queueID, err)
		}
		out = append(out, msgs...)
		off = extInt(t, resp, "nextBeginOffset")
	}
}

// countKeys counts the UNIQ_KEYs stored in every queue of topic on node i.
func countKeys(t *testing.T, g *brokertest.Group, i int, topic string, queues int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for q := 0; q < queues; q++ {
		for _, m := range pullAll(t, g, i, topic, q) {
			seen[m.UniqKey()]++
		}
	}
	return seen
}

func TestDelayLevelDeliveredOnTime(t *testing.T) {
	g := delayGroup(t, testDelayLevels)
	leader := g.WaitLeader(5 * time.Second)
	createTopicAt(t, g, leader, "delayed", 2, 6)
	key := sendParked(t, g, leader, "delayed", 1, map[string]string{message.PropertyDelayLevel: "2", "custom": "kept"}, "hello")
	if n := maxOffsetOf(t, g, leader, "delayed", 1); n != 0 {
		t.Fatalf("delayed message pullable at once: max offset %d", n)
	}
	var got *message.MessageExt
	g.Eventually(3*time.Second, func() error {
		if msgs := pullAll(t, g, leader, "delayed", 1); len(msgs) > 0 {
			got = msgs[0]
			return nil
		}
		return fmt.Errorf("not delivered yet")
	})
	due := got.BornTimestamp + 200
	late := got.StoreTimestamp - due
	t.Logf("level 2 (200 ms): delivered %d ms after due (bound includes the send's own latency)", late)
	if late < 0 || late > 100 {
		t.Fatalf("delivered %d ms from due time, want within [0, 100]", late)
	}
	if got.UniqKey() != key || string(got.Body) != "hello" || got.Property("custom") != "kept" || got.Tags() != "tg" {
		t.Fatalf("delivered message lost content: %+v", got)
	}
	if got.Property(message.PropertyDelayLevel) != "" || got.Property(message.PropertyRealTopic) != "delayed" || got.QueueID != 1 {
		t.Fatalf("delivered message: DELAY %q REAL_TOPIC %q queue %d", got.Property(message.PropertyDelayLevel), got.Property(message.PropertyRealTopic), got.QueueID)
	}
	for i := 0; i < g.Len(); i++ { // replicated: every node answers the progress
		g.Eventually(3*time.Second, func() error {
			resp := g.Invoke(i, remoting.NewRequest(remoting.ReqGetAllDelayOffset, nil, nil))
			if resp.Code != remoting.ResSuccess || string(resp.Body) != `{"offsetTable":{2:1}}` {
				return fmt.Errorf("node %d delay offsets: %d %s", i, resp.Code, resp.Body)
			}
			return nil
		})
	}
}

func TestDelayLevelsManyMessagesOnce(t *testing.T) {
	g := delayGroup(t, testDelayLevels)
	leader := g.WaitLeader(5 * time.Second)
	createTopicAt(t, g, leader, "many", 4, 6)
	want := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				level := strconv.Itoa(1 + (i+w)%5)
				if i%10 == 0 {
					level = "99" // capped at the highest level
				}
				node := (leader + i) % g.Len() // followers forward
				k := sendParked(t, g, node, "many", w, map[string]string{message.PropertyDelayLevel: level}, "m"+strconv.Itoa(i))
				mu.Lock()
				want[k] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	g.Eventually(10*time.Second, func() error {
		seen := countKeys(t, g, leader, "many", 4)
		if len(seen) < len(want) {
			return fmt.Errorf("%d of %d delivered", len(seen), len(want))
		}
		for k, n := range seen {
			if !want[k] || n != 1 {
				t.Fatalf("key %q delivered %d times (wanted: %v)", k, n, want[k])
			}
		}
		return nil
	})
}

// The default levels: level 1 is one second.
func TestDelayRealLevelOne(t *testing.T) {
	g := delayGroup(t, broker.DefaultMessageDelayLevel)
	leader := g.WaitLeader(5 * time.Second)
	createTopicAt(t, g, leader, "real", 1, 6)
	sendParked(t, g, leader, "real", 0, map[string]string{message.PropertyDelayLevel: "1"}, "x")
	got := nextIn(t, g, leader, "real", 0, 5*time.Second)
	late := got.StoreTimestamp - (got.BornTimestamp + 1000)
	t.Logf("level 1 (1 s): delivered %d ms after due", late)
	if late < 0 || late > 100 {
		t.Fatalf("level 1 delivered %d ms from due", late)
	}
}

// TestLargestMessageDelayed: a message of the largest accepted body, sent
// with a delay level to a topic with a long name, is stored, and its
// delivery — rebuilt for the longer real topic — fits one raft entry too.
// (1 MiB messages and entries, so the test stays light under -race.)
func TestLargestMessageDelayed(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{Configure: func(_ int, c *broker.Config) {
		c.MessageDelayLevel = testDelayLevels
		c.MaxMessageSize = 1 << 20
		rc := dledger.DefaultConfig()
		rc.MaxBatchBytes = 1 << 20
		c.Raft = &rc
	}})
	leader := g.WaitLeader(5 * time.Second)
	topic := strings.Repeat("L", 120)
	createTopicAt(t, g, leader, topic, 1, 6)
	body := strings.Repeat("b", 1<<20)
	props := map[string]string{message.PropertyDelayLevel: "1", message.PropertyUniqKey: "largest", "pad": strings.Repeat("p", 30000)}
	// A retry after an unknown outcome is answered from the dedupe window.
	g.Eventually(20*time.Second, func() error {
		resp := g.Invoke(g.WaitLeader(5*time.Second), sendMsgReq(topic, 0, props, []byte(body)))
		if resp.Code != remoting.ResSuccess {
			return fmt.Errorf("send of the largest message: %d %q", resp.Code, resp.Remark)
		}
		return nil
	})
	g.Eventually(20*time.Second, func() error {
		if got := pullAll(t, g, g.WaitLeader(5*time.Second), topic, 0); len(got) != 1 || len(got[0].Body) != len(body) {
			return fmt.Errorf("%d delivered", len(got))
		}
		return nil
	})
}

// TestDelayDueTimeFromAClockAheadIsCorrected: a delay message parked while
// the clock ran ahead (a leader's clock before a failover, or this node's
// before it was stepped back) is due within its level's delay of now, as
// RocketMQ corrects it, not the size of the step later.
func TestDelayDueTimeFromAClockAheadIsCorrected(t *testing.T) {
	g := delayGroup(t, testDelayLevels)
	leader := g.WaitLeader(5 * time.Second)
	createTopicAt(t, g, leader, "stepped", 1, 6)
	t.Cleanup(func() { wallclock.SetOffset(0) })
	wallclock.SetOffset(10 * time.Minute)
	sendParked(t, g, leader, "stepped", 0, map[string]string{message.PropertyDelayLevel: "10"}, "ahead") // 1 s
	wallclock.SetOffset(0)
	stepped := time.Now()
	g.Eventually(5*time.Second, func() error {
		if len(pullAll(t, g, leader, "stepped", 0)) == 0 {
			return fmt.Errorf("not delivered %v after the clock was stepped back 10 min", time.Since(stepped))
		}
		return nil
	})
	t.Logf("delivered %v after the step back", time.Since(stepped).Round(time.Millisecond))
}
