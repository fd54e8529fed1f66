package broker_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// sqlPull is a PULL_MESSAGE carrying an SQL92 subscription.
func sqlPull(topic string, offset int64, expr string) *remoting.Command {
	req := pullReq(pullArgs{topic: topic, offset: offset, sysFlag: protocol.PullFlagSubscription, sub: expr})
	req.ExtFields["expressionType"] = protocol.ExprSQL92
	return req
}

// sendProps sends one message with properties to node i.
func sendProps(t *testing.T, g *brokertest.Group, i int, topic string, props map[string]string, body string) {
	t.Helper()
	mustSucceed(t, g.Invoke(i, sendMsgReq(topic, 0, props, []byte(body))), "send "+body)
}

// TestSQL92Pull: an SQL92 subscription receives exactly the matching
// messages, over user properties and TAGS, from the request or from the
// group's heartbeat; a bad expression is SUBSCRIPTION_PARSE_FAILED naming
// the position.
func TestSQL92Pull(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{})
	createTopicAt(t, g, leader, "sql", 1, 6)
	for i := 0; i < 40; i++ {
		props := map[string]string{"a": strconv.Itoa(i), message.PropertyTags: []string{"red", "blue"}[i%2]}
		if i%5 == 0 {
			props["region"] = "eu"
		}
		sendProps(t, g, leader, "sql", props, "m"+strconv.Itoa(i))
	}
	want := func(expr string, pred func(i int) bool) {
		t.Helper()
		var got []string
		for _, n := range []int{leader, followerOf(g, leader)} {
			got = got[:0]
			for off := int64(0); off < 40; {
				resp := g.Invoke(n, sqlPull("sql", off, expr))
				if resp.Code == remoting.ResSuccess {
					msgs, err := message.DecodeExts(resp.Body)
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range msgs {
						got = append(got, string(m.Body))
					}
				} else if resp.Code != remoting.ResPullRetryImmediately && resp.Code != remoting.ResPullNotFound {
					t.Fatalf("%q: pull answered %d %q", expr, resp.Code, resp.Remark)
				}
				off = extInt(t, resp, "nextBeginOffset")
			}
			var exp []string
			for i := 0; i < 40; i++ {
				if pred(i) {
					exp = append(exp, "m"+strconv.Itoa(i))
				}
			}
			if strings.Join(got, ",") != strings.Join(exp, ",") {
				t.Fatalf("%q on node %d: got %v\nwant %v", expr, n, got, exp)
			}
		}
	}
	want("a > 30", func(i int) bool { return i > 30 })
	want("a BETWEEN 3 AND 6 AND TAGS = 'red'", func(i int) bool { return i >= 3 && i <= 6 && i%2 == 0 })
	want("region IS NOT NULL OR TAGS IN ('blue') AND a < 4", func(i int) bool { return i%5 == 0 || (i%2 == 1 && i < 4) })
	want("region = 'us'", func(int) bool { return false })
	// Pinned TAGS (decided on the consumequeue's tag hashes first).
	want("(TAGS = 'blue' OR TAGS IN ('green')) AND a >= 35", func(i int) bool { return i%2 == 1 && i >= 35 })
	want("TAGS IN ('red', 'blue') AND TAGS = 'red'", func(i int) bool { return i%2 == 0 })
	want("TAGS = 'none'", func(int) bool { return false })

	resp := g.Invoke(leader, sqlPull("sql", 0, "a >> 3"))
	if resp.Code != remoting.ResSubscriptionParseFailed || !strings.Contains(resp.Remark, "position") {
		t.Fatalf("bad SQL92: %d %q, want SUBSCRIPTION_PARSE_FAILED naming the position", resp.Code, resp.Remark)
	}

	// From the group's heartbeat: a pull without the subscription bit.
	body, _ := json.Marshal(protocol.HeartbeatData{ClientID: "sqlc@1", ConsumerDataSet: []protocol.ConsumerData{{
		GroupName: "sqlg", ConsumeType: protocol.ConsumePassively, MessageModel: protocol.Clustering,
		ConsumeFromWhere:    protocol.ConsumeFromFirstOffset,
		SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "sql", SubString: "a >= 38", ExpressionType: protocol.ExprSQL92, TagsSet: []string{}, CodeSet: protocol.CodeSet{}}},
	}}})
	mustSucceed(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqHeartBeat, nil, body)), "heartbeat")
	msgs := expectPull(t, g.Invoke(leader, pullReq(pullArgs{group: "sqlg", topic: "sql", offset: 0})), remoting.ResSuccess, 40)
	if len(msgs) != 2 || string(msgs[0].Body) != "m38" {
		t.Fatalf("heartbeat SQL92 subscription pulled %d messages", len(msgs))
	}
}

// TestSQL92Off: with EnablePropertyFilter false an SQL92 pull is refused
// as RocketMQ does.
func TestSQL92Off(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{Configure: func(_ int, c *broker.Config) { c.EnablePropertyFilter = false }})
	createTopicAt(t, g, leader, "sqloff", 1, 6)
	send(t, g, leader, "sqloff", 0, "", "x")
	resp := g.Invoke(leader, sqlPull("sqloff", 0, "a > 1"))
	if resp.Code != remoting.ResSystemError || !strings.Contains(resp.Remark, "SQL92") {
		t.Fatalf("SQL92 with the property filter off: %d %q", resp.Code, resp.Remark)
	}
}
