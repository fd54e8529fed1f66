package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// createTopic creates topic with n queues through the leader and waits
// until every node has applied it.
func createTopic(t *testing.T, g *brokertest.Group, topic string, n int) {
	t.Helper()
	leader := g.WaitLeader(5 * time.Second)
	q := strconv.Itoa(n)
	resp := g.Invoke(leader, remoting.NewRequest(remoting.ReqUpdateAndCreateTopic, map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": q, "writeQueueNums": q, "perm": "6",
		"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
	}, nil))
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("create topic %s: %d %s", topic, resp.Code, resp.Remark)
	}
	g.Eventually(5*time.Second, func() error {
		for i := 0; i < g.Len(); i++ {
			if b := g.Broker(i); b != nil {
				if _, ok := b.Metadata().Topic(topic); !ok {
					return fmt.Errorf("node %d has not applied topic %s", i, topic)
				}
			}
		}
		return nil
	})
}

// sendReq is a SEND_MESSAGE of one message with a tag.
func sendReq(topic string, queueID int, tag, body string) *remoting.Command {
	props := map[string]string{}
	if tag != "" {
		props[message.PropertyTags] = tag
	}
	return remoting.NewRequest(remoting.ReqSendMessage, map[string]string{
		"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(queueID), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": string(message.EncodeProperties(props)), "reconsumeTimes": "0",
		"unitMode": "false", "batch": "false",
	}, []byte(body))
}

// send sends one message to node i and returns its queue offset.
func send(t *testing.T, g *brokertest.Group, i int, topic string, queueID int, tag, body string) int64 {
	t.Helper()
	resp := g.Invoke(i, sendReq(topic, queueID, tag, body))
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("send to %s/%d: %d %s", topic, queueID, resp.Code, resp.Remark)
	}
	off, err := strconv.ParseInt(resp.ExtFields["queueOffset"], 10, 64)
	if err != nil {
		t.Fatalf("send answer queueOffset %q: %v", resp.ExtFields["queueOffset"], err)
	}
	// A send is answered once durable on a majority, which can be before
	// node i applied it to its consumequeue (as in RocketMQ, where queues
	// are built after the answer); the tests pull right after sending.
	g.Eventually(5*time.Second, func() error {
		if n := maxOffsetOf(t, g, i, topic, queueID); n <= off {
			return fmt.Errorf("%s/%d max offset %d, sent at %d", topic, queueID, n, off)
		}
		return nil
	})
	return off
}

// pullArgs are the fields of a PULL_MESSAGE the tests vary.
type pullArgs struct {
	group, topic string
	queueID      int
	offset       int64
	max          int
	sysFlag      int
	commitOffset int64
	suspendMs    int64
	sub          string
}

func pullReq(a pullArgs) *remoting.Command {
	if a.max == 0 {
		a.max = 32
	}
	if a.group == "" {
		a.group = "cg"
	}
	return remoting.NewRequest(remoting.ReqPullMessage, map[string]string{
		"consumerGroup": a.group, "topic": a.topic, "queueId": strconv.Itoa(a.queueID),
		"queueOffset": strconv.FormatInt(a.offset, 10), "maxMsgNums": strconv.Itoa(a.max),
		"sysFlag": strconv.Itoa(a.sysFlag), "commitOffset": strconv.FormatInt(a.commitOffset, 10),
		"suspendTimeoutMillis": strconv.FormatInt(a.suspendMs, 10), "subscription": a.sub,
		"subVersion": "0", "expressionType": "TAG",
	}, nil)
}

// extInt parses an int64 ext field of resp, failing the test if absent.
func extInt(t *testing.T, resp *remoting.Command, key string) int64 {
	t.Helper()
	v, ok := resp.ExtFields[key]
	if !ok {
		t.Fatalf("answer %v has no %s", resp, key)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("answer field %s=%q: %v", key, v, err)
	}
	return n
}

// expectPull checks a pull answer's code and nextBeginOffset and returns
// its decoded messages.
func expectPull(t *testing.T, resp *remoting.Command, code int16, next int64) []*message.MessageExt {
	t.Helper()
	if resp.Code != code {
		t.Fatalf("pull answered %s (%d) %q, want %s", remoting.ResponseCodeName(resp.Code), resp.Code, resp.Remark, remoting.ResponseCodeName(code))
	}
	if got := extInt(t, resp, "nextBeginOffset"); got != next {
		t.Fatalf("pull nextBeginOffset = %d, want %d (answer %v)", got, next, resp)
	}
	if resp.ExtFields["suggestWhichBrokerId"] != "0" {
		t.Fatalf("suggestWhichBrokerId = %q, want 0", resp.ExtFields["suggestWhichBrokerId"])
	}
	extInt(t, resp, "minOffset")
	extInt(t, resp, "maxOffset")
	if code != remoting.ResSuccess {
		if len(resp.Body) != 0 {
			t.Fatalf("pull %d answer has a %d-byte body", code, len(resp.Body))
		}
		return nil
	}
	msgs, err := message.DecodeExts(resp.Body)
	if err != nil {
		t.Fatalf("decoding pulled body: %v", err)
	}
	return msgs
}

// heartbeatBody is a consumer's HEART_BEAT body with one subscription.
func heartbeatBody(clientID, group, topic, sub string) []byte {
	type subData struct {
		ClassFilterMode bool     `json:"classFilterMode"`
		Topic           string   `json:"topic"`
		SubString       string   `json:"subString"`
		TagsSet         []string `json:"tagsSet"`
		CodeSet         []string `json:"codeSet"`
		SubVersion      int64    `json:"subVersion"`
		ExpressionType  string   `json:"expressionType"`
	}
	sd := subData{Topic: topic, SubString: sub, TagsSet: []string{}, CodeSet: []string{}, SubVersion: time.Now().UnixNano(), ExpressionType: "TAG"}
	if sub != "*" {
		sd.TagsSet = []string{sub}
		sd.CodeSet = []string{strconv.FormatInt(message.TagsHashCode(sub), 10)}
	}
	body, _ := json.Marshal(map[string]any{
		"clientID":        clientID,
		"producerDataSet": []any{map[string]string{"groupName": "CLIENT_INNER_PRODUCER"}},
		"consumerDataSet": []any{map[string]any{
			"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": []subData{sd}, "unitMode": false,
		}},
	})
	return body
}

// invokeOn sends req to node i through cl.
func invokeOn(t *testing.T, g *brokertest.Group, cl *remoting.Client, i int, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, g.Addr(i), req)
	if err != nil {
		t.Fatalf("invoke %s on node %d: %v", remoting.CodeName(req.Code), i, err)
	}
	return resp
}

// follower returns the index of a running node that is not the leader.
func follower(g *brokertest.Group, leader int) int {
	return (leader + 1) % g.Len()
}
