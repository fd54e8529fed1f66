package protocol

import (
	"strconv"

	"github.com/raftmq/raftmq/remoting"
)

// Typed request headers: each decodes with Header (the broker side) and
// encodes back to extFields (the SDK side), so both read and write the
// same field names.

// SendMessageHeader is RocketMQ's SendMessageRequestHeader, the header of
// SEND_MESSAGE (10), SEND_MESSAGE_V2 (310, one-letter keys) and
// SEND_BATCH_MESSAGE (320, V2 keys).
type SendMessageHeader struct {
	ProducerGroup         string
	Topic                 string
	DefaultTopic          string
	DefaultTopicQueueNums int32
	// QueueID < 0 asks the broker to pick a writable queue.
	QueueID           int32
	SysFlag           int32
	BornTimestamp     int64
	Flag              int32
	Properties        string
	ReconsumeTimes    int32
	UnitMode          bool
	MaxReconsumeTimes int32
	// HasMaxReconsumeTimes: the header carried maxReconsumeTimes.
	HasMaxReconsumeTimes bool
	Batch                bool
	BrokerName           string
}

// sendV2Keys maps SendMessageRequestHeader's field names to
// SendMessageRequestHeaderV2's one-letter keys. Frozen (wire).
var sendV2Keys = map[string]string{
	"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d",
	"queueId": "e", "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i",
	"reconsumeTimes": "j", "unitMode": "k", "maxReconsumeTimes": "l", "batch": "m", "bname": "n",
}

// DecodeSendMessageHeader reads the header of a send request of code
// (V1 keys for SEND_MESSAGE; V2 or V1 keys for the other two). topic and
// queueId are required.
func DecodeSendMessageHeader(code int16, ext map[string]string) (SendMessageHeader, error) {
	h := ReadHeader(ext)
	if code != remoting.ReqSendMessage {
		h.alias = sendV2Keys
	}
	s := SendMessageHeader{
		ProducerGroup:         h.OptStr("producerGroup"),
		Topic:                 h.Str("topic"),
		DefaultTopic:          h.OptStr("defaultTopic"),
		DefaultTopicQueueNums: h.OptInt32("defaultTopicQueueNums", 0),
		QueueID:               h.Int32("queueId"),
		SysFlag:               h.OptInt32("sysFlag", 0),
		BornTimestamp:         h.OptInt64("bornTimestamp", 0),
		Flag:                  h.OptInt32("flag", 0),
		Properties:            h.OptStr("properties"),
		ReconsumeTimes:        h.OptInt32("reconsumeTimes", 0),
		MaxReconsumeTimes:     h.OptInt32("maxReconsumeTimes", 0),
		HasMaxReconsumeTimes:  h.Has("maxReconsumeTimes"),
		BrokerName:            h.OptStr("bname"),
	}
	s.UnitMode = h.OptStr("unitMode") == "true"
	s.Batch = h.OptStr("batch") == "true" || code == remoting.ReqSendBatchMessage
	return s, h.Err()
}

// ExtV2 encodes the header with SendMessageRequestHeaderV2's one-letter
// keys (SEND_MESSAGE_V2, SEND_BATCH_MESSAGE).
func (s SendMessageHeader) ExtV2() map[string]string {
	return map[string]string{
		"a": s.ProducerGroup, "b": s.Topic, "c": s.DefaultTopic, "d": itoa(s.DefaultTopicQueueNums),
		"e": itoa(s.QueueID), "f": itoa(s.SysFlag), "g": ltoa(s.BornTimestamp), "h": itoa(s.Flag),
		"i": s.Properties, "j": itoa(s.ReconsumeTimes), "k": strconv.FormatBool(s.UnitMode),
		"l": itoa(s.MaxReconsumeTimes), "m": strconv.FormatBool(s.Batch), "n": s.BrokerName,
	}
}

// Pull sysFlag bits, as RocketMQ's PullSysFlag. Frozen.
const (
	PullFlagCommitOffset = 1 << 0
	PullFlagSuspend      = 1 << 1
	PullFlagSubscription = 1 << 2
	PullFlagClassFilter  = 1 << 3
)

// PullMessageHeader is RocketMQ's PullMessageRequestHeader (PULL_MESSAGE,
// 11).
type PullMessageHeader struct {
	ConsumerGroup        string
	Topic                string
	QueueID              int32
	QueueOffset          int64
	MaxMsgNums           int32
	SysFlag              int32
	CommitOffset         int64
	SuspendTimeoutMillis int64
	Subscription         string
	SubVersion           int64
	ExpressionType       string
	BrokerName           string
}

// DecodePullMessageHeader reads a PULL_MESSAGE header; group, topic,
// queueId, queueOffset, maxMsgNums and sysFlag are required.
func DecodePullMessageHeader(ext map[string]string) (PullMessageHeader, error) {
	h := ReadHeader(ext)
	p := PullMessageHeader{
		ConsumerGroup:        h.Str("consumerGroup"),
		Topic:                h.Str("topic"),
		QueueID:              h.Int32("queueId"),
		QueueOffset:          h.Int64("queueOffset"),
		MaxMsgNums:           h.Int32("maxMsgNums"),
		SysFlag:              h.Int32("sysFlag"),
		CommitOffset:         h.OptInt64("commitOffset", 0),
		SuspendTimeoutMillis: h.OptInt64("suspendTimeoutMillis", 0),
		Subscription:         h.OptStr("subscription"),
		SubVersion:           h.OptInt64("subVersion", 0),
		ExpressionType:       h.OptStr("expressionType"),
		BrokerName:           h.OptStr("bname"),
	}
	return p, h.Err()
}

// Ext encodes the header.
func (p PullMessageHeader) Ext() map[string]string {
	return map[string]string{
		"consumerGroup": p.ConsumerGroup, "topic": p.Topic, "queueId": itoa(p.QueueID),
		"queueOffset": ltoa(p.QueueOffset), "maxMsgNums": itoa(p.MaxMsgNums), "sysFlag": itoa(p.SysFlag),
		"commitOffset": ltoa(p.CommitOffset), "suspendTimeoutMillis": ltoa(p.SuspendTimeoutMillis),
		"subscription": p.Subscription, "subVersion": ltoa(p.SubVersion), "expressionType": p.ExpressionType,
		"bname": p.BrokerName,
	}
}

// QueueHeader names one queue: the header of GET_MAX_OFFSET (30),
// GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32) and, with
// Timestamp, SEARCH_OFFSET_BY_TIMESTAMP (29).
type QueueHeader struct {
	Topic   string
	QueueID int32
}

// DecodeQueueHeader reads topic and queueId, both required.
func DecodeQueueHeader(ext map[string]string) (QueueHeader, error) {
	h := ReadHeader(ext)
	q := QueueHeader{Topic: h.Str("topic"), QueueID: h.Int32("queueId")}
	return q, h.Err()
}

// Ext encodes the header.
func (q QueueHeader) Ext() map[string]string {
	return map[string]string{"topic": q.Topic, "queueId": itoa(q.QueueID)}
}

// ConsumerOffsetHeader names a consumer group's offset in one queue:
// QUERY_CONSUMER_OFFSET (14) and, with CommitOffset,
// UPDATE_CONSUMER_OFFSET (15).
type ConsumerOffsetHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	CommitOffset  int64
}

// DecodeConsumerOffsetHeader reads consumerGroup, topic and queueId (all
// required) and, when withCommit, the required commitOffset.
func DecodeConsumerOffsetHeader(ext map[string]string, withCommit bool) (ConsumerOffsetHeader, error) {
	h := ReadHeader(ext)
	o := ConsumerOffsetHeader{ConsumerGroup: h.Str("consumerGroup"), Topic: h.Str("topic"), QueueID: h.Int32("queueId")}
	if withCommit {
		o.CommitOffset = h.Int64("commitOffset")
	}
	return o, h.Err()
}

// Ext encodes the header; withCommit adds commitOffset.
func (o ConsumerOffsetHeader) Ext(withCommit bool) map[string]string {
	ext := map[string]string{"consumerGroup": o.ConsumerGroup, "topic": o.Topic, "queueId": itoa(o.QueueID)}
	if withCommit {
		ext["commitOffset"] = ltoa(o.CommitOffset)
	}
	return ext
}

// SendBackHeader is RocketMQ's ConsumerSendMsgBackRequestHeader
// (CONSUMER_SEND_MSG_BACK, 36).
type SendBackHeader struct {
	Group       string
	Offset      int64 // the failed message's commit offset
	DelayLevel  int32
	OriginMsgID string
	OriginTopic string
	UnitMode    bool
	// MaxReconsumeTimes < 0 or missing means the group's budget.
	MaxReconsumeTimes int32
}

// DecodeSendBackHeader reads the header; group and offset are required.
func DecodeSendBackHeader(ext map[string]string) (SendBackHeader, error) {
	h := ReadHeader(ext)
	s := SendBackHeader{
		Group:             h.Str("group"),
		Offset:            h.Int64("offset"),
		DelayLevel:        h.OptInt32("delayLevel", 0),
		OriginMsgID:       h.OptStr("originMsgId"),
		OriginTopic:       h.OptStr("originTopic"),
		UnitMode:          h.OptStr("unitMode") == "true",
		MaxReconsumeTimes: h.OptInt32("maxReconsumeTimes", -1),
	}
	if h.Err() == nil && s.Offset < 0 {
		h.fail("offset", ext["offset"])
	}
	return s, h.Err()
}

// Ext encodes the header.
func (s SendBackHeader) Ext() map[string]string {
	return map[string]string{
		"group": s.Group, "offset": ltoa(s.Offset), "delayLevel": itoa(s.DelayLevel),
		"originMsgId": s.OriginMsgID, "originTopic": s.OriginTopic,
		"unitMode": strconv.FormatBool(s.UnitMode), "maxReconsumeTimes": itoa(s.MaxReconsumeTimes),
	}
}

// QueryMessageHeader is RocketMQ's QueryMessageRequestHeader
// (QUERY_MESSAGE, 12). UniqueKey is the _UNIQUE_KEY_QUERY flag.
type QueryMessageHeader struct {
	Topic          string
	Key            string
	MaxNum         int32
	BeginTimestamp int64
	EndTimestamp   int64
	UniqueKey      bool
}

// UniqueKeyQueryFlag marks a QUERY_MESSAGE by unique key.
const UniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY"

// DecodeQueryMessageHeader reads the header; every field is required.
func DecodeQueryMessageHeader(ext map[string]string) (QueryMessageHeader, error) {
	h := ReadHeader(ext)
	q := QueryMessageHeader{
		Topic: h.Str("topic"), Key: h.Str("key"), MaxNum: h.Int32("maxNum"),
		BeginTimestamp: h.Int64("beginTimestamp"), EndTimestamp: h.Int64("endTimestamp"),
		UniqueKey: h.OptStr(UniqueKeyQueryFlag) == "true",
	}
	return q, h.Err()
}

// Ext encodes the header.
func (q QueryMessageHeader) Ext() map[string]string {
	ext := map[string]string{
		"topic": q.Topic, "key": q.Key, "maxNum": itoa(q.MaxNum),
		"beginTimestamp": ltoa(q.BeginTimestamp), "endTimestamp": ltoa(q.EndTimestamp),
	}
	if q.UniqueKey {
		ext[UniqueKeyQueryFlag] = "true"
	}
	return ext
}

// CreateTopicHeader is RocketMQ's CreateTopicRequestHeader
// (UPDATE_AND_CREATE_TOPIC, 17).
type CreateTopicHeader struct {
	Topic           string
	DefaultTopic    string
	ReadQueueNums   int32
	WriteQueueNums  int32
	Perm            int32
	TopicFilterType string
	TopicSysFlag    int32
	Order           bool
}

// DecodeCreateTopicHeader reads the header: topic, readQueueNums and
// writeQueueNums are required; perm defaults to read|write, the filter
// type to SINGLE_TAG.
func DecodeCreateTopicHeader(ext map[string]string) (CreateTopicHeader, error) {
	h := ReadHeader(ext)
	c := CreateTopicHeader{
		Topic:           h.Str("topic"),
		DefaultTopic:    h.OptStr("defaultTopic"),
		ReadQueueNums:   h.Int32("readQueueNums"),
		WriteQueueNums:  h.Int32("writeQueueNums"),
		Perm:            h.OptInt32("perm", PermReadWrite),
		TopicFilterType: h.OptStr("topicFilterType"),
		TopicSysFlag:    h.OptInt32("topicSysFlag", 0),
		Order:           h.OptBool("order", false),
	}
	if c.TopicFilterType == "" {
		c.TopicFilterType = FilterSingleTag
	}
	return c, h.Err()
}

// Ext encodes the header.
func (c CreateTopicHeader) Ext() map[string]string {
	filter := c.TopicFilterType
	if filter == "" {
		filter = FilterSingleTag
	}
	def := c.DefaultTopic
	if def == "" {
		def = DefaultTopic
	}
	return map[string]string{
		"topic": c.Topic, "defaultTopic": def, "readQueueNums": itoa(c.ReadQueueNums),
		"writeQueueNums": itoa(c.WriteQueueNums), "perm": itoa(c.Perm), "topicFilterType": filter,
		"topicSysFlag": itoa(c.TopicSysFlag), "order": strconv.FormatBool(c.Order),
	}
}
