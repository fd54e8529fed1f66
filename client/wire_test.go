package client

import (
	"context"
	"encoding/json"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// The tests here pin what the client puts on the wire to what it sent
// before it used protocol's types: each reference below is the client's
// former private encoder, kept verbatim.

// refSendHeader is the former Producer.sendHeader, bornTimestamp given.
func refSendHeader(group string, q MessageQueue, pm *prepared, born int64) map[string]string {
	return map[string]string{
		"a": group, "b": pm.topic, "c": "TBW102", "d": strconv.Itoa(4),
		"e": strconv.Itoa(int(q.QueueID)), "f": strconv.Itoa(int(pm.sysFlag)),
		"g": strconv.FormatInt(born, 10), "h": strconv.Itoa(int(pm.flag)),
		"i": pm.props, "j": "0", "k": "false", "l": "0", "m": strconv.FormatBool(pm.batch), "n": q.BrokerName,
	}
}

// TestSendHeaderUnchanged: SendMessageHeader.ExtV2 gives the same keys and
// values as the former hand-built header, for a single and a batch send.
func TestSendHeaderUnchanged(t *testing.T) {
	p, err := NewProducer("pg-wire", WithNameServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	q := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 3}
	for _, pm := range []*prepared{
		{topic: "T", sysFlag: message.SysFlagCompressed, flag: 7, props: "TAGS\x01a\x02"},
		{topic: "T", batch: true},
	} {
		got := p.sendHeader(q, pm)
		born, err := strconv.ParseInt(got["g"], 10, 64)
		if err != nil || time.Since(time.UnixMilli(born)) > time.Minute {
			t.Fatalf("bornTimestamp %q", got["g"])
		}
		if want := refSendHeader("pg-wire", q, pm, born); !maps.Equal(got, want) {
			t.Errorf("send header\n got %v\nwant %v", got, want)
		}
	}
}

// refPullExt is the former groupMember.pullRequest's header.
func refPullExt(group string, mq MessageQueue, offset int64, pullBatch int, flag int32, commit int64,
	suspend time.Duration, expr string, version int64) map[string]string {
	return map[string]string{
		"consumerGroup": group, "topic": mq.Topic, "queueId": strconv.Itoa(int(mq.QueueID)),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": strconv.Itoa(pullBatch),
		"sysFlag": strconv.Itoa(int(flag)), "commitOffset": strconv.FormatInt(commit, 10),
		"suspendTimeoutMillis": strconv.FormatInt(suspend.Milliseconds(), 10),
		"subscription":         expr, "subVersion": strconv.FormatInt(version, 10), "expressionType": "TAG",
		"bname": mq.BrokerName,
	}
}

// TestPullHeaderUnchanged: PullMessageHeader.Ext gives the former header,
// with the commit offset flag (a clustering push consumer) and without (a
// pull consumer; a queue without a subscription).
func TestPullHeaderUnchanged(t *testing.T) {
	push, err := NewPushConsumer("cg-wire", WithNameServers("127.0.0.1:1"), WithPullBatchSize(16))
	if err != nil {
		t.Fatal(err)
	}
	defer push.Close(context.Background())
	if err := push.Subscribe("T", " A || B ", func(context.Context, []*message.MessageExt) ConsumeResult { return ConsumeSuccess }); err != nil {
		t.Fatal(err)
	}
	pull, err := NewPullConsumer("cg-wire-pull", WithNameServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close(context.Background())
	mq := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 2}
	qs := &queueState{mq: mq, pq: newProcessQueue(40)}

	sub := push.gm.subs["T"]
	got := push.gm.pullRequest(qs, 41).ExtFields
	want := refPullExt("cg-wire", mq, 41, 16, 1|2|4, 40, DefaultSuspendTimeout, "A || B", sub.version)
	if !maps.Equal(got, want) {
		t.Errorf("push pull header\n got %v\nwant %v", got, want)
	}
	got = pull.gm.pullRequest(qs, 41).ExtFields
	want = refPullExt("cg-wire-pull", mq, 41, DefaultPullBatchSize, 2|4, 0, DefaultSuspendTimeout, "*", 0)
	if !maps.Equal(got, want) {
		t.Errorf("pull consumer header\n got %v\nwant %v", got, want)
	}
}

// Former private heartbeat types, verbatim.
type refHeartbeatData struct {
	ClientID        string            `json:"clientID"`
	ProducerDataSet []refProducerData `json:"producerDataSet"`
	ConsumerDataSet []refConsumerData `json:"consumerDataSet"`
}

type refProducerData struct {
	GroupName string `json:"groupName"`
}

type refConsumerData struct {
	GroupName           string                `json:"groupName"`
	ConsumeType         string                `json:"consumeType"`
	MessageModel        string                `json:"messageModel"`
	ConsumeFromWhere    string                `json:"consumeFromWhere"`
	SubscriptionDataSet []refSubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool                  `json:"unitMode"`
}

type refSubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         []string `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"`
}

// refSubscription is the former subscription.data.
func refSubscription(s *subscription) refSubscriptionData {
	sd := refSubscriptionData{Topic: s.topic, SubString: s.expr, TagsSet: []string{}, CodeSet: []string{},
		SubVersion: s.version, ExpressionType: "TAG"}
	for _, t := range s.tags {
		sd.TagsSet = append(sd.TagsSet, t)
		sd.CodeSet = append(sd.CodeSet, strconv.FormatInt(message.TagsHashCode(t), 10))
	}
	return sd
}

// TestHeartbeatBodyUnchanged: the HEART_BEAT bodies of a producer, a push
// consumer (with its retry subscription) and a pull consumer are byte for
// byte what the former private types encoded.
func TestHeartbeatBodyUnchanged(t *testing.T) {
	p, err := NewProducer("pg-hb", WithNameServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	checkBody(t, p.c, refHeartbeatData{ClientID: p.ClientID(), ProducerDataSet: []refProducerData{{GroupName: "pg-hb"}},
		ConsumerDataSet: []refConsumerData{}})

	push, err := NewPushConsumer("cg-hb", WithNameServers("127.0.0.1:1"), WithConsumeFrom(ConsumeFromFirst()))
	if err != nil {
		t.Fatal(err)
	}
	defer push.Close(context.Background())
	h := func(context.Context, []*message.MessageExt) ConsumeResult { return ConsumeSuccess }
	if err := push.Subscribe("T", "A || B || A", h); err != nil {
		t.Fatal(err)
	}
	retry := push.gm.subs[protocol.RetryTopic("cg-hb")]
	checkBody(t, push.gm.c, refHeartbeatData{ClientID: push.ClientID(), ProducerDataSet: []refProducerData{},
		ConsumerDataSet: []refConsumerData{{GroupName: "cg-hb", ConsumeType: "CONSUME_PASSIVELY",
			MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
			SubscriptionDataSet: []refSubscriptionData{refSubscription(retry), refSubscription(push.gm.subs["T"])}}}})

	pull, err := NewPullConsumer("cg-hb-pull", WithNameServers("127.0.0.1:1"), WithMessageModel(Broadcasting),
		WithConsumeFrom(ConsumeFromTimestamp(time.Now())))
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close(context.Background())
	if err := pull.Subscribe("T", "*"); err != nil {
		t.Fatal(err)
	}
	checkBody(t, pull.gm.c, refHeartbeatData{ClientID: pull.ClientID(), ProducerDataSet: []refProducerData{},
		ConsumerDataSet: []refConsumerData{{GroupName: "cg-hb-pull", ConsumeType: "CONSUME_ACTIVELY",
			MessageModel: "BROADCASTING", ConsumeFromWhere: "CONSUME_FROM_TIMESTAMP",
			SubscriptionDataSet: []refSubscriptionData{refSubscription(pull.gm.subs["T"])}}}})
}

func checkBody(t *testing.T, c *core, ref refHeartbeatData) {
	t.Helper()
	got, err := c.heartbeatBody()
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("heartbeat body\n got %s\nwant %s", got, want)
	}
}

// TestLockBodyUnchanged: LOCK_BATCH_MQ's body is the former one.
func TestLockBodyUnchanged(t *testing.T) {
	type refLockQueueMQ struct {
		Topic      string `json:"topic"`
		BrokerName string `json:"brokerName"`
		QueueID    int32  `json:"queueId"`
	}
	type refLockBatchBody struct {
		ConsumerGroup string           `json:"consumerGroup"`
		ClientID      string           `json:"clientId"`
		MQSet         []refLockQueueMQ `json:"mqSet"`
	}
	mqs := []MessageQueue{{"T", "broker-a", 0}, {"T", "broker-a", 1}}
	got, err := json.Marshal(lockRequest("cg", "1.2.3.4@5", mqs))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(refLockBatchBody{ConsumerGroup: "cg", ClientID: "1.2.3.4@5",
		MQSet: []refLockQueueMQ{{"T", "broker-a", 0}, {"T", "broker-a", 1}}})
	if string(got) != string(want) {
		t.Errorf("lock body\n got %s\nwant %s", got, want)
	}
}

// TestSmallHeadersUnchanged: the headers built with protocol's Ext methods
// are the former hand-built maps.
func TestSmallHeadersUnchanged(t *testing.T) {
	q := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 5}
	m := &message.MessageExt{Message: message.Message{Topic: "T"}, CommitLogOffset: 1234}
	m.SetUniqKey("UNIQ")
	begin, end := time.UnixMilli(1000), time.UnixMilli(2000)
	commit := offsetHeader("cg", q)
	commit.CommitOffset = 9
	for name, c := range map[string]struct{ got, want map[string]string }{
		"queue": {queueExt(q), map[string]string{"topic": "T", "queueId": "5"}},
		"query offset": {offsetHeader("cg", q).Ext(false),
			map[string]string{"consumerGroup": "cg", "topic": "T", "queueId": "5"}},
		"commit offset": {commit.Ext(true),
			map[string]string{"consumerGroup": "cg", "topic": "T", "queueId": "5", "commitOffset": "9"}},
		"send back": {sendBackHeader("cg", m, 16), map[string]string{"group": "cg", "offset": "1234", "delayLevel": "0",
			"originMsgId": "UNIQ", "originTopic": "T", "unitMode": "false", "maxReconsumeTimes": "16"}},
		"create topic": {createTopicHeader(TopicConfig{Topic: "T", Order: true}), map[string]string{
			"topic": "T", "defaultTopic": "TBW102", "readQueueNums": "8", "writeQueueNums": "8", "perm": "6",
			"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "true"}},
		"create topic sized": {createTopicHeader(TopicConfig{Topic: "T", Queues: 2, Perm: 4}), map[string]string{
			"topic": "T", "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "2", "perm": "4",
			"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}},
		"query message": {queryHeader("T", "k", begin, end, 0), map[string]string{"topic": "T", "key": "k",
			"maxNum": "32", "beginTimestamp": "1000", "endTimestamp": "2000"}},
		"query unique key": {uniqueQueryHeader("T", "UNIQ", begin, end), map[string]string{"topic": "T", "key": "UNIQ",
			"maxNum": "32", "beginTimestamp": "1000", "endTimestamp": "2000", "_UNIQUE_KEY_QUERY": "true"}},
		"admin pull": {adminPullHeader(q, 7, 1), map[string]string{"consumerGroup": "TOOLS_CONSUMER", "topic": "T",
			"queueId": "5", "queueOffset": "7", "maxMsgNums": "1", "sysFlag": "4", "commitOffset": "0",
			"suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG", "bname": "broker-a"}},
	} {
		if !maps.Equal(c.got, c.want) {
			t.Errorf("%s header\n got %v\nwant %v", name, c.got, c.want)
		}
	}
}
