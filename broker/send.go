package broker

// Send: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310, one-letter header keys) and
// SEND_BATCH_MESSAGE (320). A non-leader forwards the request to the leader
// untouched (plus the producer's address, so the stored born host is the
// producer's, not the follower's). The leader checks it as RocketMQ's
// AbstractSendMessageProcessor.msgCheck and the store do:
//
//   - malformed header or bad topic name: SYSTEM_ERROR (TopicValidator);
//   - TBW102 itself: SYSTEM_ERROR; system topics (SCHEDULE_TOPIC_XXXX,
//     the transaction half/op topics): NO_PERMISSION;
//   - unknown topic: created through the default topic (TBW102, when
//     Config.AutoCreateTopic) or as a %RETRY% topic with one queue, else
//     TOPIC_NOT_EXIST "topic[x] not exist, apply first please!";
//   - topic without write perm: NO_PERMISSION;
//   - queueId >= max(writeQueueNums, readQueueNums): SYSTEM_ERROR, as
//     RocketMQ; a negative queueId picks a random writable queue;
//   - body over Config.MaxMessageSize (a batch: the whole batch body),
//     properties over 32767 bytes or malformed: MESSAGE_ILLEGAL.
//
// Each message becomes one stored record (body stored as sent, compressed
// bit kept), and the request one PutMessagesCommand; the leader stamps the
// offsets and store time in place when it commits. The answer carries the
// offsetMsgId of each record (comma-separated for a batch), the queue and
// the first queue offset.
//
// A message with a DELAY level is parked in SCHEDULE_TOPIC_XXXX (delay.go)
// and delivered to the queue it names when due. A client's re-send to
// %RETRY%<group> whose reconsume count reached its budget goes to
// %DLQ%<group> undelayed (retry.go). Transaction half messages
// are still stored as ordinary messages; transactions come later.
// Batches follow RocketMQ and refuse delay levels, half messages and
// %RETRY% topics (MESSAGE_ILLEGAL).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

const (
	// extBornHost carries the producer's address on a forwarded send
	// (raftmq extension).
	extBornHost = "raftmqBornHost"
	// sendTimeout bounds waiting for a send's proposal to commit.
	sendTimeout = 10 * time.Second
	// regionID and traceOn are the MSG_REGION and TRACE_ON response fields
	// RocketMQ brokers add to send answers (their defaults).
	regionID = "DefaultRegion"
	traceOn  = "true"
)

// notAllowedSendTopics are RocketMQ's TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET.
var notAllowedSendTopics = map[string]bool{
	ScheduleTopic:                        true,
	TimerTopic:                           true,
	"RMQ_SYS_TRANS_HALF_TOPIC":           true,
	"RMQ_SYS_TRANS_OP_HALF_TOPIC":        true,
	"RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC": true,
}

// putStats counts what this node stored as leader, for runtime info.
type putStats struct {
	messages atomic.Int64
	bytes    atomic.Int64
}

func (b *Broker) registerSend() {
	b.handle(remoting.ReqSendMessage, b.sendMessage)
	b.handle(remoting.ReqSendMessageV2, b.sendMessage)
	b.handle(remoting.ReqSendBatchMessage, b.sendMessage)
}

// sendHeader is RocketMQ's SendMessageRequestHeader.
type sendHeader struct {
	producerGroup         string
	topic                 string
	defaultTopic          string
	defaultTopicQueueNums int32
	queueID               int32
	sysFlag               int32
	bornTimestamp         int64
	flag                  int32
	properties            string
	reconsumeTimes        int32
	maxReconsumeTimes     int32
	batch                 bool
	toDLQ                 bool // a %RETRY% re-send over its budget (retry.go)
}

// v2Keys maps SendMessageRequestHeaderV2's one-letter keys to V1's.
var v2Keys = map[string]string{
	"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums",
	"e": "queueId", "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties",
	"j": "reconsumeTimes", "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch", "n": "bname",
}

// parseSendHeader reads a V1 or V2 header. topic and queueId are required;
// other numbers default to 0, and a number that does not parse is an error.
func parseSendHeader(req *remoting.Command) (sendHeader, error) {
	ext := req.ExtFields
	if req.Code != remoting.ReqSendMessage {
		ext = make(map[string]string, len(req.ExtFields))
		for k, v := range req.ExtFields {
			if long, ok := v2Keys[k]; ok {
				k = long
			}
			ext[k] = v
		}
	}
	h := sendHeader{
		producerGroup: ext["producerGroup"], topic: ext["topic"], defaultTopic: ext["defaultTopic"],
		properties: ext["properties"], batch: ext["batch"] == "true" || req.Code == remoting.ReqSendBatchMessage,
	}
	if h.topic == "" {
		return h, fmt.Errorf("the custom field <topic> is null")
	}
	if _, ok := ext["queueId"]; !ok {
		return h, fmt.Errorf("the custom field <queueId> is null")
	}
	var err error
	int32s := []struct {
		key string
		dst *int32
	}{
		{"defaultTopicQueueNums", &h.defaultTopicQueueNums}, {"queueId", &h.queueID}, {"sysFlag", &h.sysFlag},
		{"flag", &h.flag}, {"reconsumeTimes", &h.reconsumeTimes}, {"maxReconsumeTimes", &h.maxReconsumeTimes},
	}
	for _, f := range int32s {
		if *f.dst, err = extInt32(ext, f.key); err != nil {
			return h, err
		}
	}
	if v := ext["bornTimestamp"]; v != "" {
		if h.bornTimestamp, err = strconv.ParseInt(v, 10, 64); err != nil {
			return h, fmt.Errorf("header field bornTimestamp %q is not a number", v)
		}
	}
	return h, nil
}

func extInt32(ext map[string]string, key string) (int32, error) {
	v := ext[key]
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("header field %s %q is not a 32-bit number", key, v)
	}
	return int32(n), nil
}

// sendMessage serves codes 10, 310 and 320.
func (b *Broker) sendMessage(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	req = withBornHost(c, req)
	if !b.node.IsLeader() {
		return b.forward(ctx, req)
	}
	h, err := parseSendHeader(req)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "bad send header: %v", err)
	}
	tc, resp := b.checkSend(ctx, req, h)
	if resp != nil {
		return resp
	}
	if h, resp = b.retryToDLQ(ctx, req, h); resp != nil {
		return resp
	}
	queueID := h.queueID
	if queueID < 0 {
		queueID = rand.Int32N(max(tc.WriteQueueNums, 1))
	}
	var msgs []dledger.Message
	if h.batch {
		msgs, resp = b.buildBatch(req, h, queueID)
	} else {
		msgs, resp = b.buildSingle(req, h, queueID)
	}
	if resp != nil {
		return resp
	}
	pctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	res, err := b.propose(pctx, &dledger.PutMessagesCommand{Messages: msgs})
	if err != nil {
		return b.proposeFailure(ctx, req, err)
	}
	return b.sendResponse(req, h, queueID, msgs, res)
}

// withBornHost records the producer's address in a request that may be
// forwarded; a request that was forwarded to us already carries it. The
// handler owns req, so it is changed in place (a clone per send was 6 % of
// the leader's CPU).
func withBornHost(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	if req.ExtFields[extForwarded] != "" && req.ExtFields[extBornHost] != "" {
		return req
	}
	if req.ExtFields == nil {
		req.ExtFields = map[string]string{}
	}
	req.ExtFields[extBornHost] = c.RemoteAddr().String()
	return req
}

// bornHost is the producer's address recorded by withBornHost.
func bornHost(req *remoting.Command) netip.AddrPort {
	ap, err := netip.ParseAddrPort(req.ExtFields[extBornHost])
	if err != nil {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// checkSend validates the header against the topic table, creating the
// topic if RocketMQ would. A non-nil response is the answer.
func (b *Broker) checkSend(ctx context.Context, req *remoting.Command, h sendHeader) (dledger.TopicConfig, *remoting.Command) {
	if err := ValidateTopic(h.topic); err != nil {
		return dledger.TopicConfig{}, errResponse(req, remoting.ResSystemError, "%v", err)
	}
	if h.topic == DefaultTopic {
		return dledger.TopicConfig{}, errResponse(req, remoting.ResSystemError,
			"the topic[%s] is conflict with system reserved words", h.topic)
	}
	if notAllowedSendTopics[h.topic] {
		return dledger.TopicConfig{}, errResponse(req, remoting.ResNoPermission, "sending message to topic[%s] is forbidden", h.topic)
	}
	tc, ok := b.topic(h.topic)
	if !ok {
		var resp *remoting.Command
		if tc, resp = b.autoCreate(ctx, req, h); resp != nil {
			return tc, resp
		}
	}
	if tc.Perm&PermWrite == 0 {
		return tc, errResponse(req, remoting.ResNoPermission, "the topic[%s] sending message is forbidden (perm %d)", h.topic, tc.Perm)
	}
	if limit := max(tc.WriteQueueNums, tc.ReadQueueNums); h.queueID >= limit {
		return tc, errResponse(req, remoting.ResSystemError,
			"request queueId[%d] is illegal, topic %s has %d write / %d read queues", h.queueID, h.topic, tc.WriteQueueNums, tc.ReadQueueNums)
	}
	return tc, nil
}

// autoCreate creates an unknown topic as RocketMQ's
// createTopicInSendMessageMethod does: from a default topic that has the
// inherit perm (TBW102 when auto-creation is on), with
// min(defaultTopicQueueNums, the default topic's queues) queues, or as a
// one-queue %RETRY% topic.
func (b *Broker) autoCreate(ctx context.Context, req *remoting.Command, h sendHeader) (dledger.TopicConfig, *remoting.Command) {
	var tc dledger.TopicConfig
	if def, ok := b.inheritableTopic(h.defaultTopic); ok {
		n := def.WriteQueueNums
		if h.defaultTopic == DefaultTopic {
			n = min(n, b.cfg.DefaultQueueNums)
		}
		if h.defaultTopicQueueNums > 0 {
			n = min(n, h.defaultTopicQueueNums)
		}
		tc = dledger.TopicConfig{Name: h.topic, ReadQueueNums: n, WriteQueueNums: n, Perm: def.Perm &^ PermInherit}
	} else if len(h.topic) > len(RetryPrefix) && h.topic[:len(RetryPrefix)] == RetryPrefix {
		tc = retryTopicConfig(h.topic[len(RetryPrefix):])
	} else {
		return tc, errResponse(req, remoting.ResTopicNotExist, "topic[%s] not exist, apply first please!", h.topic)
	}
	created, err := b.ensureTopic(ctx, tc)
	if err != nil {
		return tc, b.proposeFailure(ctx, req, err)
	}
	b.log.Info("topic auto-created on send", "topic", h.topic, "queues", created.WriteQueueNums, "producer", req.ExtFields[extBornHost])
	b.reg.signal()
	return created, nil
}

// inheritableTopic returns the default topic a producer named, if new
// topics may be created from it.
func (b *Broker) inheritableTopic(name string) (dledger.TopicConfig, bool) {
	if name == DefaultTopic {
		return defaultTopicConfig(), b.cfg.AutoCreateTopic
	}
	if name == "" {
		return dledger.TopicConfig{}, false
	}
	t, ok := b.topic(name)
	return t, ok && t.Perm&PermInherit != 0
}

// sendResponse is the SendMessageResponseHeader of a stored request.
func (b *Broker) sendResponse(req *remoting.Command, h sendHeader, queueID int32, msgs []dledger.Message, res dledger.Result) *remoting.Command {
	if len(res.Messages) != len(msgs) || len(msgs) == 0 {
		return errResponse(req, remoting.ResSystemError, "stored %d of %d messages", len(res.Messages), len(msgs))
	}
	ids := make([]byte, 0, len(msgs)*(message.OffsetMsgIDLenV4+1))
	var size int64
	for i, r := range res.Messages {
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = append(ids, message.EncodeOffsetMsgID(b.storeHost, r.CommitOffset)...)
		size += int64(len(msgs[i].Record))
	}
	b.puts.messages.Add(int64(len(msgs)))
	b.puts.bytes.Add(size)
	resp := okResponse(req)
	resp.ExtFields["msgId"] = string(ids)
	resp.ExtFields["queueId"] = strconv.Itoa(int(queueID))
	resp.ExtFields["queueOffset"] = strconv.FormatInt(res.Messages[0].QueueOffset, 10)
	resp.ExtFields[message.PropertyMsgRegion] = regionID
	resp.ExtFields[message.PropertyTraceOn] = traceOn
	if !h.batch && message.TransactionValue(h.sysFlag) == message.SysFlagTransactionPrepared {
		if props, err := message.DecodeProperties([]byte(h.properties)); err == nil && props[message.PropertyUniqKey] != "" {
			resp.ExtFields["transactionId"] = props[message.PropertyUniqKey]
		}
	}
	return resp
}
