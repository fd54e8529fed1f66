package protocol

import "strconv"

// Request-reply (RocketMQ 4.6+): a requester sends a message carrying
// CORRELATION_ID, REPLY_TO_CLIENT (its client id) and TTL; the consumer
// answers with a reply message (MSG_TYPE "reply", topic
// ReplyTopic(cluster)) sent as SEND_REPLY_MESSAGE(_V2); the broker pushes
// it to the requester as PUSH_REPLY_MESSAGE_TO_CLIENT (326) with a
// ReplyMessageHeader and the reply's body.

// ReplyMessageFlag is the MSG_TYPE property of a reply message.
const ReplyMessageFlag = "reply"

// PropertyPushReplyTime is when the broker pushed a reply (ms).
const PropertyPushReplyTime = "PUSH_REPLY_TIME"

// ReplyTopic is a cluster's request-reply topic, <cluster>_REPLY_TOPIC.
func ReplyTopic(cluster string) string { return cluster + ReplyTopicSuffix }

// ReplyMessageHeader is RocketMQ's ReplyMessageRequestHeader, the header
// of PUSH_REPLY_MESSAGE_TO_CLIENT.
type ReplyMessageHeader struct {
	ProducerGroup         string
	Topic                 string
	DefaultTopic          string
	DefaultTopicQueueNums int32
	QueueID               int32
	SysFlag               int32
	BornTimestamp         int64
	Flag                  int32
	Properties            string
	ReconsumeTimes        int32
	UnitMode              bool
	BornHost              string // host:port of the replier
	StoreHost             string // host:port of the broker
	StoreTimestamp        int64
}

// DecodeReplyMessageHeader reads the header; topic is required.
func DecodeReplyMessageHeader(ext map[string]string) (ReplyMessageHeader, error) {
	h := ReadHeader(ext)
	r := ReplyMessageHeader{
		ProducerGroup: h.OptStr("producerGroup"), Topic: h.Str("topic"), DefaultTopic: h.OptStr("defaultTopic"),
		DefaultTopicQueueNums: h.OptInt32("defaultTopicQueueNums", 0), QueueID: h.OptInt32("queueId", 0),
		SysFlag: h.OptInt32("sysFlag", 0), BornTimestamp: h.OptInt64("bornTimestamp", 0), Flag: h.OptInt32("flag", 0),
		Properties: h.OptStr("properties"), ReconsumeTimes: h.OptInt32("reconsumeTimes", 0),
		UnitMode: h.OptBool("unitMode", false), BornHost: h.OptStr("bornHost"), StoreHost: h.OptStr("storeHost"),
		StoreTimestamp: h.OptInt64("storeTimestamp", 0),
	}
	return r, h.Err()
}

// Ext encodes the header.
func (r ReplyMessageHeader) Ext() map[string]string {
	return map[string]string{
		"producerGroup": r.ProducerGroup, "topic": r.Topic, "defaultTopic": r.DefaultTopic,
		"defaultTopicQueueNums": itoa(r.DefaultTopicQueueNums), "queueId": itoa(r.QueueID), "sysFlag": itoa(r.SysFlag),
		"bornTimestamp": ltoa(r.BornTimestamp), "flag": itoa(r.Flag), "properties": r.Properties,
		"reconsumeTimes": itoa(r.ReconsumeTimes), "unitMode": strconv.FormatBool(r.UnitMode),
		"bornHost": r.BornHost, "storeHost": r.StoreHost, "storeTimestamp": ltoa(r.StoreTimestamp),
	}
}
