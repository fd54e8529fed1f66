package broker_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

type topicWrapper struct {
	TopicConfigTable map[string]struct {
		TopicName       string `json:"topicName"`
		ReadQueueNums   int32  `json:"readQueueNums"`
		WriteQueueNums  int32  `json:"writeQueueNums"`
		Perm            int32  `json:"perm"`
		TopicFilterType string `json:"topicFilterType"`
	} `json:"topicConfigTable"`
	DataVersion struct {
		Counter int64 `json:"counter"`
	} `json:"dataVersion"`
}

func allTopics(t *testing.T, g *brokertest.Group, node int) topicWrapper {
	t.Helper()
	resp := g.Invoke(node, remoting.NewRequest(remoting.ReqGetAllTopicConfig, nil, nil))
	mustSucceed(t, resp, "GET_ALL_TOPIC_CONFIG")
	var w topicWrapper
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatalf("topic config body %s: %v", resp.Body, err)
	}
	return w
}

func TestAdminTopicsGroupsAndRuntime(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{})
	fol := followerOf(g, leader)

	// Create through a follower (forwarded), list on every node.
	createTopicAt(t, g, fol, "Admin1", 3, 6)
	for i := 0; i < g.Len(); i++ {
		g.Eventually(5*time.Second, func() error {
			tc, ok := allTopics(t, g, i).TopicConfigTable["Admin1"]
			if !ok || tc.ReadQueueNums != 3 || tc.WriteQueueNums != 3 || tc.Perm != 6 || tc.TopicFilterType != "SINGLE_TAG" {
				return fmt.Errorf("node %d: Admin1 = %+v (listed %v)", i, tc, ok)
			}
			return nil
		})
	}
	if _, ok := allTopics(t, g, leader).TopicConfigTable[protocol.DefaultTopic]; !ok {
		t.Fatal("TBW102 not listed with auto-create on")
	}
	// Bad creates.
	for _, ext := range []map[string]string{
		{"topic": "bad topic", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"},
		{"topic": "Q0", "readQueueNums": "0", "writeQueueNums": "1", "perm": "6"},
		{"topic": "Q2000", "readQueueNums": "2000", "writeQueueNums": "2000", "perm": "6"},
		{"topic": "NoQueues", "perm": "6"},
		{"topic": "BadPerm", "readQueueNums": "1", "writeQueueNums": "1", "perm": "9"},
		{"topic": protocol.DefaultTopic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"},
	} {
		resp := g.Invoke(fol, remoting.NewRequest(remoting.ReqUpdateAndCreateTopic, ext, nil))
		if resp.Code != remoting.ResSystemError || resp.Remark == "" {
			t.Fatalf("create %v: code %d remark %q", ext, resp.Code, resp.Remark)
		}
	}
	// Delete through a follower.
	mustSucceed(t, g.Invoke(fol, remoting.NewRequest(remoting.ReqDeleteTopicInBroker, map[string]string{"topic": "Admin1"}, nil)), "delete topic")
	if _, ok := g.Broker(leader).Metadata().Topic("Admin1"); ok {
		t.Fatal("Admin1 still on the leader after delete")
	}
	g.Eventually(5*time.Second, func() error {
		if _, ok := allTopics(t, g, fol).TopicConfigTable["Admin1"]; ok {
			return fmt.Errorf("Admin1 still listed on follower")
		}
		return nil
	})

	// Subscription groups: defaults for missing fields, list, delete.
	body := []byte(`{"groupName":"cg1","retryMaxTimes":3}`)
	mustSucceed(t, g.Invoke(fol, remoting.NewRequest(remoting.ReqUpdateAndCreateSubscriptionGroup, nil, body)), "create group")
	var gw struct {
		SubscriptionGroupTable map[string]struct {
			GroupName      string `json:"groupName"`
			ConsumeEnable  bool   `json:"consumeEnable"`
			RetryQueueNums int32  `json:"retryQueueNums"`
			RetryMaxTimes  int32  `json:"retryMaxTimes"`
		} `json:"subscriptionGroupTable"`
	}
	resp := g.Invoke(leader, remoting.NewRequest(remoting.ReqGetAllSubscriptionGroupConfig, nil, nil))
	mustSucceed(t, resp, "list groups")
	if err := json.Unmarshal(resp.Body, &gw); err != nil {
		t.Fatal(err)
	}
	if cg := gw.SubscriptionGroupTable["cg1"]; cg.GroupName != "cg1" || !cg.ConsumeEnable || cg.RetryQueueNums != 1 || cg.RetryMaxTimes != 3 {
		t.Fatalf("group cg1 = %+v", cg)
	}
	if resp := g.Invoke(leader, remoting.NewRequest(remoting.ReqUpdateAndCreateSubscriptionGroup, nil, []byte("{"))); resp.Code != remoting.ResSystemError {
		t.Fatalf("bad group body: code %d", resp.Code)
	}
	mustSucceed(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqDeleteSubscriptionGroup, map[string]string{"groupName": "cg1"}, nil)), "delete group")
	if _, ok := g.Broker(leader).Metadata().SubscriptionGroup("cg1"); ok {
		t.Fatal("cg1 survived its deletion")
	}

	// Runtime info has the raft keys on every node, one leader among them.
	leaders := 0
	for i := 0; i < g.Len(); i++ {
		resp := g.Invoke(i, remoting.NewRequest(remoting.ReqGetBrokerRuntimeInfo, nil, nil))
		mustSucceed(t, resp, "runtime info")
		var kv struct {
			Table map[string]string `json:"table"`
		}
		if err := json.Unmarshal(resp.Body, &kv); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"raftState", "raftTerm", "raftCommitIndex", "raftAppliedIndex", "raftLastLogIndex",
			"raftLeaderId", "raftLeaderAddr", "raftNodeId", "commitLogMaxOffset", "commitLogMinOffset", "brokerVersionDesc", "msgPutTotalTodayNow"} {
			if kv.Table[k] == "" {
				t.Fatalf("node %d runtime info lacks %s: %v", i, k, kv.Table)
			}
		}
		if kv.Table["raftState"] == "Leader" {
			leaders++
			if kv.Table["raftLeaderId"] != kv.Table["raftNodeId"] {
				t.Fatalf("leader names %s as leader", kv.Table["raftLeaderId"])
			}
		}
		if term, err := strconv.Atoi(kv.Table["raftTerm"]); err != nil || term < 1 {
			t.Fatalf("raftTerm %q", kv.Table["raftTerm"])
		}
	}
	if leaders != 1 {
		t.Fatalf("%d nodes report Leader", leaders)
	}
}

func queryReq(topic, key string, maxNum int, uniq bool) *remoting.Command {
	ext := map[string]string{"topic": topic, "key": key, "maxNum": strconv.Itoa(maxNum),
		"beginTimestamp": "0", "endTimestamp": strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)}
	if uniq {
		ext["_UNIQUE_KEY_QUERY"] = "true"
	}
	return remoting.NewRequest(remoting.ReqQueryMessage, ext, nil)
}

func TestQueryAndViewMessage(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{})
	createTopicAt(t, g, leader, "QTopic", 2, 6)
	createTopicAt(t, g, leader, "Other", 2, 6)
	// Five messages with key "order-7" (one also "order-70"), others with
	// keys sharing prefixes, and the same key in another topic.
	uniq := map[int]string{}
	for i := 0; i < 10; i++ {
		keys := "order-" + strconv.Itoa(i%2*7) // order-0 or order-7
		if i == 3 {
			keys += " order-70"
		}
		uniq[i] = fmt.Sprintf("%032X", 1000+i)
		mustSucceed(t, g.Invoke(leader, sendMsgReq("QTopic", i%2, map[string]string{"KEYS": keys, "UNIQ_KEY": uniq[i]}, []byte("q"+strconv.Itoa(i)))), "send")
	}
	mustSucceed(t, g.Invoke(leader, sendMsgReq("Other", 0, map[string]string{"KEYS": "order-7"}, []byte("other"))), "send other")

	bodies := func(resp *remoting.Command) []string {
		ms, err := message.DecodeExts(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, string(m.Body))
		}
		slices.Sort(out)
		return out
	}
	for i := 0; i < g.Len(); i++ {
		g.Eventually(5*time.Second, func() error {
			resp := g.Invoke(i, queryReq("QTopic", "order-7", 32, false))
			if resp.Code != remoting.ResSuccess {
				return fmt.Errorf("node %d: code %d %q", i, resp.Code, resp.Remark)
			}
			if got, want := bodies(resp), []string{"q1", "q3", "q5", "q7", "q9"}; !slices.Equal(got, want) {
				return fmt.Errorf("node %d: key order-7 found %v, want %v", i, got, want)
			}
			return nil
		})
	}
	resp := g.Invoke(leader, queryReq("QTopic", "order-7", 2, false))
	mustSucceed(t, resp, "query maxNum 2")
	if n := len(bodies(resp)); n != 2 {
		t.Fatalf("maxNum 2 returned %d", n)
	}
	resp = g.Invoke(leader, queryReq("QTopic", uniq[4], 1, true))
	mustSucceed(t, resp, "uniq query")
	if got := bodies(resp); !slices.Equal(got, []string{"q4"}) {
		t.Fatalf("uniq key query found %v", got)
	}
	if resp.ExtFields["indexLastUpdatePhyoffset"] == "" || resp.ExtFields["indexLastUpdateTimestamp"] == "" {
		t.Fatalf("query response ext %v", resp.ExtFields)
	}
	for _, q := range []*remoting.Command{
		queryReq("QTopic", "order-", 32, false),
		queryReq("QTopic", "nope", 32, false),
		remoting.NewRequest(remoting.ReqQueryMessage, map[string]string{"topic": "QTopic", "key": "order-7", "maxNum": "32",
			"beginTimestamp": "0", "endTimestamp": "1"}, nil),
	} {
		if resp := g.Invoke(leader, q); resp.Code != remoting.ResQueryNotFound || resp.Remark == "" {
			t.Fatalf("query %v: code %d %q, want QUERY_NOT_FOUND", q.ExtFields, resp.Code, resp.Remark)
		}
	}
	if resp := g.Invoke(leader, remoting.NewRequest(remoting.ReqQueryMessage, map[string]string{"topic": "QTopic"}, nil)); resp.Code != remoting.ResSystemError {
		t.Fatalf("query without key: code %d", resp.Code)
	}

	// View: offsets that hold no record start are refused with a remark.
	sent := g.Invoke(leader, sendMsgReq("QTopic", 0, nil, []byte("view me")))
	mustSucceed(t, sent, "send")
	_, co, err := message.DecodeOffsetMsgID(sent.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []string{strconv.FormatInt(co+1, 10), "999999999", "-1", "x"} {
		resp := g.Invoke(leader, remoting.NewRequest(remoting.ReqViewMessageByID, map[string]string{"offset": off}, nil))
		if resp.Code != remoting.ResSystemError || !strings.Contains(resp.Remark, "offset") {
			t.Fatalf("view offset %s: code %d %q", off, resp.Code, resp.Remark)
		}
	}
	if m, err := viewByID(g, leader, sent.ExtFields["msgId"]); err != nil || string(m.Body) != "view me" {
		t.Fatalf("view: %+v %v", m, err)
	}
}
