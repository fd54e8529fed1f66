package broker_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// sendExt is a SEND_MESSAGE header as the official Go client builds it.
func sendHeaderExt(topic string, queueID int, props map[string]string) map[string]string {
	return map[string]string{
		"producerGroup": "pg", "topic": topic, "defaultTopic": protocol.DefaultTopic, "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(queueID), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": string(message.EncodeProperties(props)), "reconsumeTimes": "0",
		"unitMode": "false", "maxReconsumeTimes": "16", "batch": "false", "bname": "broker-a",
	}
}

func sendMsgReq(topic string, queueID int, props map[string]string, body []byte) *remoting.Command {
	return remoting.NewRequest(remoting.ReqSendMessage, sendHeaderExt(topic, queueID, props), body)
}

// v2 turns a V1 send header into SEND_MESSAGE_V2's one-letter keys.
func v2Req(code int16, ext map[string]string, body []byte) *remoting.Command {
	short := map[string]string{
		"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d", "queueId": "e",
		"sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i", "reconsumeTimes": "j",
		"unitMode": "k", "maxReconsumeTimes": "l", "batch": "m", "bname": "n",
	}
	out := map[string]string{}
	for k, v := range ext {
		out[short[k]] = v
	}
	return remoting.NewRequest(code, out, body)
}

func mustSucceed(t *testing.T, resp *remoting.Command, what string) {
	t.Helper()
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("%s: code %d (%s) remark %q", what, resp.Code, remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
}

func createTopicAt(t *testing.T, g *brokertest.Group, node int, topic string, queues, perm int) {
	t.Helper()
	q := strconv.Itoa(queues)
	ext := map[string]string{"topic": topic, "defaultTopic": protocol.DefaultTopic, "readQueueNums": q, "writeQueueNums": q,
		"perm": strconv.Itoa(perm), "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}
	mustSucceed(t, g.Invoke(node, remoting.NewRequest(remoting.ReqUpdateAndCreateTopic, ext, nil)), "create topic "+topic)
}

// viewByID fetches the record behind an offsetMsgId from node i and
// returns it decoded.
func viewByID(g *brokertest.Group, i int, msgID string) (*message.MessageExt, error) {
	_, co, err := message.DecodeOffsetMsgID(msgID)
	if err != nil {
		return nil, err
	}
	resp := g.Invoke(i, remoting.NewRequest(remoting.ReqViewMessageByID, map[string]string{"offset": strconv.FormatInt(co, 10)}, nil))
	if resp.Code != remoting.ResSuccess {
		return nil, fmt.Errorf("view %s on node %d: code %d %q", msgID, i, resp.Code, resp.Remark)
	}
	m, n, err := message.DecodeExt(resp.Body)
	if err != nil || n != len(resp.Body) {
		return nil, fmt.Errorf("view %s: decode: %v (%d of %d bytes)", msgID, err, n, len(resp.Body))
	}
	if m.CommitLogOffset != co {
		return nil, fmt.Errorf("view %s: record at %d, want %d", msgID, m.CommitLogOffset, co)
	}
	return m, nil
}

func followerOf(g *brokertest.Group, leader int) int { return (leader + 1) % g.Len() }

// startGroup starts a group and waits until every node knows the leader,
// so a follower can forward from the first request on.
func startGroup(t *testing.T, opts brokertest.Options) (*brokertest.Group, int) {
	t.Helper()
	g := brokertest.Start(t, opts)
	leader := g.WaitLeader(5 * time.Second)
	g.Eventually(5*time.Second, func() error {
		for i := 0; i < g.Len(); i++ {
			if _, id := g.Broker(i).Node().Leader(); id != g.Broker(leader).Node().ID() {
				return fmt.Errorf("node %d knows leader %q", i, id)
			}
		}
		return nil
	})
	return g, leader
}

func TestSendLeaderAndFollower(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{})
	createTopicAt(t, g, leader, "TopicA", 4, 6)
	for _, node := range []int{leader, followerOf(g, leader)} {
		body := []byte("hello from client to node " + strconv.Itoa(node))
		props := map[string]string{"TAGS": "tagA", "KEYS": "k1 k2", "UNIQ_KEY": fmt.Sprintf("%032X", node+1)}
		resp := g.Invoke(node, sendMsgReq("TopicA", 1, props, body))
		mustSucceed(t, resp, fmt.Sprintf("send to node %d", node))
		if resp.ExtFields["queueId"] != "1" || resp.ExtFields["queueOffset"] == "" {
			t.Fatalf("send to node %d: ext %v", node, resp.ExtFields)
		}
		if len(resp.ExtFields["msgId"]) != message.OffsetMsgIDLenV4 {
			t.Fatalf("msgId %q is not an offsetMsgId", resp.ExtFields["msgId"])
		}
		for i := 0; i < g.Len(); i++ {
			g.Eventually(5*time.Second, func() error {
				m, err := viewByID(g, i, resp.ExtFields["msgId"])
				if err != nil {
					return err
				}
				if !bytes.Equal(m.Body, body) || m.Topic != "TopicA" || m.QueueID != 1 || m.Tags() != "tagA" || m.StoreTimestamp == 0 {
					return fmt.Errorf("node %d viewed %+v", i, m)
				}
				if q, _ := strconv.ParseInt(resp.ExtFields["queueOffset"], 10, 64); m.QueueOffset != q {
					return fmt.Errorf("queue offset %d, answered %d", m.QueueOffset, q)
				}
				return nil
			})
		}
	}
	// Two sends to the same queue got consecutive queue offsets.
	resp := g.Invoke(leader, sendMsgReq("TopicA", 1, nil, []byte("third")))
	mustSucceed(t, resp, "third send")
	if resp.ExtFields["queueOffset"] != "2" {
		t.Fatalf("third message to queue 1 at offset %s, want 2", resp.ExtFields["queueOffset"])
	}
}

func TestSendV2AndBatch(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{})
	createTopicAt(t, g, leader, "TopicB", 2, 6)

	resp := g.Invoke(leader, v2Req(remoting.ReqSendMessageV2, sendHeaderExt("TopicB", 0, map[string]string{"TAGS": "v2"}), []byte("v2 body")))
	mustSucceed(t, resp, "V2 send")
	m, err := viewByID(g, leader, resp.ExtFields["msgId"])
	if err != nil || string(m.Body) != "v2 body" || m.Tags() != "v2" || m.QueueID != 0 {
		t.Fatalf("V2 message: %+v, %v", m, err)
	}

	var inner []*message.Message
	for i := 0; i < 3; i++ {
		im := &message.Message{Topic: "TopicB", Body: []byte("batch " + strconv.Itoa(i))}
		im.SetKeys([]string{"bk" + strconv.Itoa(i)})
		im.SetUniqKey(fmt.Sprintf("%032X", 100+i))
		inner = append(inner, im)
	}
	body, err := message.EncodeBatch(inner)
	if err != nil {
		t.Fatal(err)
	}
	ext := sendHeaderExt("TopicB", 1, nil)
	ext["batch"] = "true"
	for _, node := range []int{leader, followerOf(g, leader)} {
		resp = g.Invoke(node, v2Req(remoting.ReqSendBatchMessage, ext, body))
		mustSucceed(t, resp, "batch send")
		ids := strings.Split(resp.ExtFields["msgId"], ",")
		if len(ids) != 3 {
			t.Fatalf("batch msgId %q: want 3 ids", resp.ExtFields["msgId"])
		}
		first, _ := strconv.ParseInt(resp.ExtFields["queueOffset"], 10, 64)
		for i, id := range ids {
			m, err := viewByID(g, leader, id)
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Body) != "batch "+strconv.Itoa(i) || m.QueueOffset != first+int64(i) || m.QueueID != 1 || m.UniqKey() != fmt.Sprintf("%032X", 100+i) {
				t.Fatalf("batch message %d: %+v (first offset %d)", i, m, first)
			}
		}
	}
}

func TestSendAutoCreateThroughTBW102(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{})
	for _, c := range []struct {
		node      int
		topic     string
		askQueues string
		want      int32
	}{
		{leader, "AutoFour", "8", 4},               // capped by Config.DefaultQueueNums
		{followerOf(g, leader), "AutoTwo", "2", 2}, // producer asked for fewer; via a follower
	} {
		ext := sendHeaderExt(c.topic, 0, nil)
		ext["defaultTopicQueueNums"] = c.askQueues
		mustSucceed(t, g.Invoke(c.node, remoting.NewRequest(remoting.ReqSendMessage, ext, []byte("x"))), "auto-create send")
		tc, ok := g.Broker(leader).Metadata().Topic(c.topic)
		if !ok || tc.WriteQueueNums != c.want || tc.ReadQueueNums != c.want || tc.Perm&protocol.PermInherit != 0 || tc.Perm&protocol.PermWrite == 0 {
			t.Fatalf("auto-created %s: %+v (exists %v), want %d queues", c.topic, tc, ok, c.want)
		}
	}
	// A %RETRY% topic is created with one queue even without a default topic.
	ext := sendHeaderExt(protocol.RetryTopic("g1"), 0, nil)
	ext["defaultTopic"] = ""
	mustSucceed(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqSendMessage, ext, []byte("r"))), "retry send")
	if tc, ok := g.Broker(leader).Metadata().Topic(protocol.RetryTopic("g1")); !ok || tc.WriteQueueNums != 1 {
		t.Fatalf("retry topic: %+v %v", tc, ok)
	}
	// An unknown default topic cannot create anything.
	ext = sendHeaderExt("NoDefault", 0, nil)
	ext["defaultTopic"] = "NotATemplate"
	if resp := g.Invoke(leader, remoting.NewRequest(remoting.ReqSendMessage, ext, []byte("x"))); resp.Code != remoting.ResTopicNotExist {
		t.Fatalf("unknown default topic: code %d %q", resp.Code, resp.Remark)
	}
}

func TestSendTopicNotExistWithoutAutoCreate(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{Configure: func(_ int, c *broker.Config) { c.AutoCreateTopic = false }})
	for _, node := range []int{leader, followerOf(g, leader)} {
		resp := g.Invoke(node, sendMsgReq("Unknown", 0, nil, []byte("x")))
		if resp.Code != remoting.ResTopicNotExist || !strings.Contains(resp.Remark, "topic[Unknown] not exist, apply first please!") {
			t.Fatalf("node %d: code %d remark %q", node, resp.Code, resp.Remark)
		}
	}
	if _, ok := g.Broker(leader).Metadata().Topic("Unknown"); ok {
		t.Fatal("topic was created with auto-create off")
	}
	var w struct {
		TopicConfigTable map[string]json.RawMessage `json:"topicConfigTable"`
	}
	resp := g.Invoke(leader, remoting.NewRequest(remoting.ReqGetAllTopicConfig, nil, nil))
	mustSucceed(t, resp, "topic config")
	if err := json.Unmarshal(resp.Body, &w); err != nil || w.TopicConfigTable[protocol.DefaultTopic] != nil {
		t.Fatalf("TBW102 advertised with auto-create off: %s (%v)", resp.Body, err)
	}
}

func TestSendValidation(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{Configure: func(_ int, c *broker.Config) { c.MaxMessageSize = 1024 }})
	createTopicAt(t, g, leader, "ReadOnly", 2, protocol.PermRead)
	createTopicAt(t, g, leader, "Four", 4, 6)

	withExt := func(topic string, f func(map[string]string)) *remoting.Command {
		ext := sendHeaderExt(topic, 0, nil)
		f(ext)
		return remoting.NewRequest(remoting.ReqSendMessage, ext, []byte("x"))
	}
	badBatch := sendHeaderExt("Four", 0, nil)
	badBatch["batch"] = "true"
	cases := []struct {
		name   string
		req    *remoting.Command
		code   int16
		remark string
	}{
		{"illegal topic chars", sendMsgReq("bad topic!", 0, nil, []byte("x")), remoting.ResSystemError, "illegal characters"},
		{"topic too long", sendMsgReq(strings.Repeat("t", 128), 0, nil, []byte("x")), remoting.ResSystemError, "longer than"},
		{"default topic itself", sendMsgReq(protocol.DefaultTopic, 0, nil, []byte("x")), remoting.ResSystemError, "reserved"},
		{"system topic", sendMsgReq(protocol.ScheduleTopic, 0, nil, []byte("x")), remoting.ResNoPermission, "forbidden"},
		{"no write perm", sendMsgReq("ReadOnly", 0, nil, []byte("x")), remoting.ResNoPermission, "forbidden"},
		{"queue id too big", sendMsgReq("Four", 4, nil, []byte("x")), remoting.ResSystemError, "queueId[4] is illegal"},
		{"body too large", sendMsgReq("Four", 0, nil, make([]byte, 1025)), remoting.ResMessageIllegal, "body 1025 bytes"},
		{"properties too long", withExt("Four", func(e map[string]string) {
			e["properties"] = string(message.EncodeProperties(map[string]string{"big": strings.Repeat("p", 40000)}))
		}), remoting.ResMessageIllegal, "properties"},
		{"malformed properties", withExt("Four", func(e map[string]string) { e["properties"] = "novalue\x02" }),
			remoting.ResMessageIllegal, "illegal"},
		{"queue id not a number", withExt("Four", func(e map[string]string) { e["queueId"] = "x" }), remoting.ResSystemError, "queueId"},
		{"no topic", withExt("Four", func(e map[string]string) { delete(e, "topic") }), remoting.ResSystemError, "topic"},
		{"no queue id", withExt("Four", func(e map[string]string) { delete(e, "queueId") }), remoting.ResSystemError, "queueId"},
		{"garbage batch body", v2Req(remoting.ReqSendBatchMessage, badBatch, []byte("not a batch")), remoting.ResMessageIllegal, "batch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, node := range []int{leader, followerOf(g, leader)} {
				resp := g.Invoke(node, c.req)
				if resp.Code != c.code || !strings.Contains(resp.Remark, c.remark) {
					t.Fatalf("node %d: code %d remark %q, want code %d with %q", node, resp.Code, resp.Remark, c.code, c.remark)
				}
			}
		})
	}
	// The group still serves, and nothing was stored by the failures.
	resp := g.Invoke(leader, sendMsgReq("Four", -1, nil, make([]byte, 1024)))
	mustSucceed(t, resp, "valid send after failures")
	if resp.ExtFields["queueOffset"] != "0" {
		t.Fatalf("first stored message at offset %s", resp.ExtFields["queueOffset"])
	}
	if q, _ := strconv.Atoi(resp.ExtFields["queueId"]); q < 0 || q > 3 {
		t.Fatalf("negative queueId mapped to %d", q)
	}
}
