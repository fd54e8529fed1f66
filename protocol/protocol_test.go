package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/raftmq/raftmq/remoting"
)

func TestHeaderRequiredAndOptional(t *testing.T) {
	h := ReadHeader(map[string]string{"a": "x", "n": "12", "big": "99999999999", "b": "true", "empty": ""})
	if got := h.Str("a"); got != "x" {
		t.Fatalf("Str = %q", got)
	}
	if got := h.Int32("n"); got != 12 {
		t.Fatalf("Int32 = %d", got)
	}
	if got := h.OptInt32("missing", 7); got != 7 {
		t.Fatalf("OptInt32 default = %d", got)
	}
	if got := h.OptInt64("empty", -1); got != -1 {
		t.Fatalf("OptInt64 of empty = %d", got)
	}
	if !h.OptBool("b", false) || !h.Has("empty") || h.Has("missing") {
		t.Fatal("OptBool/Has")
	}
	if h.Err() != nil {
		t.Fatalf("Err = %v", h.Err())
	}
	_ = h.Int32("big") // out of 32-bit range
	_ = h.Str("missing")
	var he *HeaderError
	if !errors.As(h.Err(), &he) || he.Key != "big" || !strings.Contains(h.Err().Error(), `<big> has an invalid value "99999999999"`) {
		t.Fatalf("first problem = %v, want the 32-bit overflow", h.Err())
	}
	h = ReadHeader(nil)
	h.Str("topic")
	if h.Err() == nil || h.Err().Error() != "the custom field <topic> is null" {
		t.Fatalf("missing = %v", h.Err())
	}
}

func TestSendMessageHeaderV1AndV2(t *testing.T) {
	want := SendMessageHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: DefaultTopic, DefaultTopicQueueNums: 4,
		QueueID: 3, SysFlag: 8, BornTimestamp: 1700000000000, Flag: 1, Properties: "K\x01V\x02", ReconsumeTimes: 2,
		MaxReconsumeTimes: 16, HasMaxReconsumeTimes: true, Batch: true, BrokerName: "broker-a"}
	got, err := DecodeSendMessageHeader(remoting.ReqSendMessageV2, want.ExtV2())
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("V2 round trip = %+v, %v\nwant %+v", got, err, want)
	}
	v1 := map[string]string{"producerGroup": "pg", "topic": "T", "queueId": "-1", "properties": "a\x01b\x02"}
	got, err = DecodeSendMessageHeader(remoting.ReqSendMessage, v1)
	if err != nil || got.Topic != "T" || got.QueueID != -1 || got.Batch || got.HasMaxReconsumeTimes {
		t.Fatalf("V1 = %+v, %v", got, err)
	}
	// V1 keys are read under the V2 code too; a batch code is a batch.
	got, err = DecodeSendMessageHeader(remoting.ReqSendBatchMessage, v1)
	if err != nil || !got.Batch || got.ProducerGroup != "pg" {
		t.Fatalf("batch with V1 keys = %+v, %v", got, err)
	}
	for _, bad := range []map[string]string{{"queueId": "1"}, {"topic": "T"}, {"topic": "T", "queueId": "x"}} {
		if _, err := DecodeSendMessageHeader(remoting.ReqSendMessage, bad); err == nil {
			t.Errorf("%v decoded without error", bad)
		}
	}
}

func TestPullAndOffsetHeadersRoundTrip(t *testing.T) {
	p := PullMessageHeader{ConsumerGroup: "g", Topic: "T", QueueID: 1, QueueOffset: 42, MaxMsgNums: 32,
		SysFlag: PullFlagSuspend | PullFlagSubscription, CommitOffset: 40, SuspendTimeoutMillis: 15000,
		Subscription: "a || b", SubVersion: 9, ExpressionType: ExprTag, BrokerName: "b"}
	if got, err := DecodePullMessageHeader(p.Ext()); err != nil || got != p {
		t.Fatalf("pull = %+v, %v", got, err)
	}
	if _, err := DecodePullMessageHeader(map[string]string{"consumerGroup": "g", "topic": "T"}); err == nil {
		t.Fatal("pull without queueId decoded")
	}
	o := ConsumerOffsetHeader{ConsumerGroup: "g", Topic: "T", QueueID: 2, CommitOffset: 7}
	if got, err := DecodeConsumerOffsetHeader(o.Ext(true), true); err != nil || got != o {
		t.Fatalf("offset = %+v, %v", got, err)
	}
	if _, err := DecodeConsumerOffsetHeader(o.Ext(false), true); err == nil {
		t.Fatal("update without commitOffset decoded")
	}
	s := SendBackHeader{Group: "g", Offset: 100, DelayLevel: 3, OriginMsgID: "id", OriginTopic: "T", MaxReconsumeTimes: -1}
	if got, err := DecodeSendBackHeader(s.Ext()); err != nil || got != s {
		t.Fatalf("send back = %+v, %v", got, err)
	}
	if _, err := DecodeSendBackHeader(map[string]string{"group": "g", "offset": "-5"}); err == nil {
		t.Fatal("negative commit offset decoded")
	}
	c := CreateTopicHeader{Topic: "T", DefaultTopic: DefaultTopic, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6,
		TopicFilterType: FilterMultiTag, Order: true}
	if got, err := DecodeCreateTopicHeader(c.Ext()); err != nil || got != c {
		t.Fatalf("create topic = %+v, %v", got, err)
	}
	q := QueryMessageHeader{Topic: "T", Key: "k", MaxNum: 32, BeginTimestamp: 1, EndTimestamp: 2, UniqueKey: true}
	if got, err := DecodeQueryMessageHeader(q.Ext()); err != nil || got != q {
		t.Fatalf("query = %+v, %v", got, err)
	}
}

func TestCodeSetAcceptsBothClients(t *testing.T) {
	var sd SubscriptionData
	// The Java client sends numbers, the Go client strings.
	for _, body := range []string{`{"codeSet":[65,66]}`, `{"codeSet":["65"," 66"]}`} {
		sd = SubscriptionData{}
		if err := json.Unmarshal([]byte(body), &sd); err != nil || !reflect.DeepEqual(sd.CodeSet, CodeSet{65, 66}) {
			t.Fatalf("%s → %v, %v", body, sd.CodeSet, err)
		}
	}
	if err := json.Unmarshal([]byte(`{"codeSet":["x"]}`), &sd); err != nil || sd.CodeSet != nil {
		t.Fatalf("bad element → %v, %v; want nil set, no error", sd.CodeSet, err)
	}
	b, err := json.Marshal(SubscriptionData{CodeSet: CodeSet{-1, 2}})
	if err != nil || !strings.Contains(string(b), `"codeSet":["-1","2"]`) {
		t.Fatalf("marshal = %s, %v", b, err)
	}
}

func TestTagExpression(t *testing.T) {
	for _, expr := range []string{"", " * ", "*"} {
		if tags, all, err := ParseTagExpression(expr); !all || tags != nil || err != nil {
			t.Fatalf("%q → %v %v %v", expr, tags, all, err)
		}
	}
	tags, all, err := ParseTagExpression(" a || b ||a|| ")
	if all || err != nil || !reflect.DeepEqual(tags, []string{"a", "b"}) {
		t.Fatalf("tags = %v %v %v", tags, all, err)
	}
	if _, _, err := ParseTagExpression("||"); err == nil {
		t.Fatal("no-tag expression parsed")
	}
}

func TestNamesAndPerms(t *testing.T) {
	for name, ok := range map[string]bool{"Topic_1-%|": true, "": false, "a b": false, "é": false, strings.Repeat("a", 128): false} {
		if (ValidateTopic(name) == nil) != ok {
			t.Errorf("ValidateTopic(%q) = %v", name, ValidateTopic(name))
		}
	}
	if ValidateGroup(strings.Repeat("g", 255)) != nil || ValidateGroup(strings.Repeat("g", 256)) == nil {
		t.Error("group length limit")
	}
	if g, ok := RetryGroup(RetryTopic("g1")); !ok || g != "g1" || !IsSystemTopic(DLQTopic("g1")) || IsSystemTopic("orders") {
		t.Error("retry/DLQ names")
	}
	if !SendForbidden(ScheduleTopic) || SendForbidden("orders") {
		t.Error("SendForbidden")
	}
	if PermString(PermRead|PermInherit) != "R-X" || !ValidPerm(PermAll) || ValidPerm(8) {
		t.Error("perm helpers")
	}
}

func TestTransactionHeadersRoundTrip(t *testing.T) {
	e := EndTransactionHeader{ProducerGroup: "pg", TranStateTableOffset: 3, CommitLogOffset: 1 << 40, CommitOrRollback: TransactionCommitType,
		FromTransactionCheck: true, MsgID: "m", TransactionID: "tx", BrokerName: "b"}
	if got, err := DecodeEndTransactionHeader(e.Ext()); err != nil || got != e {
		t.Fatalf("end = %+v, %v", got, err)
	}
	if _, err := DecodeEndTransactionHeader(map[string]string{"producerGroup": "pg", "tranStateTableOffset": "1", "commitLogOffset": "x", "commitOrRollback": "8"}); err == nil {
		t.Fatal("bad commitLogOffset decoded")
	}
	c := CheckTransactionStateHeader{TranStateTableOffset: 4, CommitLogOffset: 99, MsgID: "m", TransactionID: "tx", OffsetMsgID: "o"}
	if got, err := DecodeCheckTransactionStateHeader(c.Ext()); err != nil || got != c {
		t.Fatalf("check = %+v, %v", got, err)
	}
}

func TestReplyHeaderRoundTrip(t *testing.T) {
	r := ReplyMessageHeader{ProducerGroup: "pg", Topic: ReplyTopic("c"), DefaultTopic: DefaultTopic, DefaultTopicQueueNums: 4,
		QueueID: 1, SysFlag: 0, BornTimestamp: 5, Flag: 2, Properties: "a\x01b\x02", ReconsumeTimes: 0, UnitMode: false,
		BornHost: "1.2.3.4:5", StoreHost: "6.7.8.9:10", StoreTimestamp: 11}
	if got, err := DecodeReplyMessageHeader(r.Ext()); err != nil || got != r {
		t.Fatalf("reply = %+v, %v", got, err)
	}
	if r.Topic != "c_REPLY_TOPIC" {
		t.Fatalf("reply topic %q", r.Topic)
	}
}
