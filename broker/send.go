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
// the first queue offset. A single message's properties are decoded once.
//
// A message with a DELAY level is parked in SCHEDULE_TOPIC_XXXX (delay.go)
// and delivered to the queue it names when due. A client's re-send to
// %RETRY%<group> whose reconsume count reached its budget goes to
// %DLQ%<group> undelayed (retry.go). A transaction half message (TRAN_MSG
// "true") is parked in RMQ_SYS_TRANS_HALF_TOPIC until END_TRANSACTION or
// the check-back decides it (transaction.go).
// A send whose unique keys were stored within Config.DedupeWindow is
// answered with the first send's result and not stored again (dedupe.go).
// Batches follow RocketMQ and refuse delay levels, half messages and
// %RETRY% topics (MESSAGE_ILLEGAL).

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

const (
	// extDuplicate marks a send answer given from the dedupe window
	// (raftmq extension): nothing was stored, the ids are the first send's.
	extDuplicate = "raftmqDuplicate"
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

// putStats counts what this node stored as leader, for runtime info.
type putStats struct {
	messages   atomic.Int64
	bytes      atomic.Int64
	duplicates atomic.Int64 // messages answered from the dedupe window
}

// sendService serves the send codes.
type sendService struct {
	rep     *replica
	topics  *topicTable
	records *recordBuilder
	retries *retryService // the DLQ rule of %RETRY% re-sends
	// registered is told when a send created a topic (re-register).
	registered func()
	// settings has autoCreateTopicEnable and defaultTopicQueueNums.
	settings *runtimeSettings
	dedupe   *dedupeWindow // nil when Config.DedupeWindow is 0
	log      hclog.Logger
	puts     putStats
	metrics  *nodeMetrics
}

func (s *sendService) register(m mux) {
	m.HandleFunc(remoting.ReqSendMessage, s.sendMessage)
	m.HandleFunc(remoting.ReqSendMessageV2, s.sendMessage)
	m.HandleFunc(remoting.ReqSendBatchMessage, s.sendMessage)
}

// sendRequest is one send as the handler works on it.
type sendRequest struct {
	req *remoting.Command
	h   protocol.SendMessageHeader
	// props are a single message's properties, decoded once (propsErr
	// when they do not decode); nil for a batch.
	props    map[string]string
	propsErr error
	toDLQ    bool   // a %RETRY% re-send over its budget (retry.go)
	dlqGroup string // the group whose DLQ toDLQ sends to
	queueID  int32
	// uniqs are the UNIQ_KEYs of the built records, in order ("" for a
	// message without one), for the dedupe window.
	uniqs []string
}

// sendMessage serves codes 10, 310 and 320.
func (s *sendService) sendMessage(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	req = withBornHost(c, req)
	if !s.rep.isLeader() {
		if resp := s.rep.forwardSend(ctx, req); resp != nil {
			return resp
		}
	}
	h, err := protocol.DecodeSendMessageHeader(req.Code, req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "bad send header: %v", err)
	}
	sr := &sendRequest{req: req, h: h}
	tc, resp := s.checkSend(ctx, sr)
	if resp != nil {
		return resp
	}
	if !h.Batch {
		sr.props, sr.propsErr = message.DecodeProperties([]byte(h.Properties))
	}
	if resp := s.retries.toDLQ(ctx, sr); resp != nil {
		return resp
	}
	sr.queueID = sr.h.QueueID
	if sr.queueID < 0 {
		sr.queueID = rand.Int32N(max(tc.WriteQueueNums, 1))
	}
	var msgs []dledger.Message
	if sr.h.Batch {
		msgs, resp = s.records.batch(sr)
	} else {
		msgs, resp = s.records.single(sr)
	}
	if resp != nil {
		return resp
	}
	pctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	release := func() {}
	if s.dedupe != nil {
		rel, dup := s.dedupe.check(pctx, sr, msgs)
		if dup != nil {
			if dup.Code == remoting.ResSuccess {
				s.puts.duplicates.Add(int64(len(msgs)))
			}
			return dup
		}
		if rel != nil {
			release = rel
		}
	}
	// A send is answered once stored on a majority, before this node
	// applied it (dledger's early answers), except a transaction's half
	// message: END_TRANSACTION looks it up on this node.
	early := message.TransactionValue(sr.h.SysFlag) != message.SysFlagTransactionPrepared
	res, err := s.rep.propose(pctx, &dledger.PutMessagesCommand{Messages: msgs, EarlyAck: early})
	if err != nil {
		release()
		return s.rep.proposeFailure(ctx, req, err)
	}
	// A retry of these keys must find them in the key index: the claim
	// is held until this node applied the entry.
	afterApplied(res, release)
	return s.sendResponse(sr, msgs, res)
}

// afterApplied runs fn once this node applied res's entry: now, or from a
// goroutine when the send was answered before.
func afterApplied(res dledger.Result, fn func()) {
	select {
	case <-res.Applied():
		fn()
	default:
		go func() {
			<-res.Applied()
			fn()
		}()
	}
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
func (s *sendService) checkSend(ctx context.Context, sr *sendRequest) (meta.TopicConfig, *remoting.Command) {
	req, h := sr.req, sr.h
	if !protocol.Writable(s.topics.meta.BrokerPermission()) {
		return meta.TopicConfig{}, errResponse(req, remoting.ResNoPermission,
			"the broker[%s] sending message is forbidden: its write permission is wiped (a drain; raftmq cluster add-write-perm gives it back)",
			s.rep.group)
	}
	if err := protocol.ValidateTopic(h.Topic); err != nil {
		return meta.TopicConfig{}, errResponse(req, remoting.ResSystemError, "%v", err)
	}
	if h.Topic == protocol.DefaultTopic {
		return meta.TopicConfig{}, errResponse(req, remoting.ResSystemError,
			"the topic[%s] is conflict with system reserved words", h.Topic)
	}
	if protocol.SendForbidden(h.Topic) {
		return meta.TopicConfig{}, errResponse(req, remoting.ResNoPermission, "sending message to topic[%s] is forbidden", h.Topic)
	}
	tc, ok := s.topics.topic(h.Topic)
	if !ok {
		var resp *remoting.Command
		if tc, resp = s.autoCreate(ctx, sr); resp != nil {
			return tc, resp
		}
	}
	if !protocol.Writable(tc.Perm) {
		return tc, errResponse(req, remoting.ResNoPermission, "the topic[%s] sending message is forbidden (perm %d)", h.Topic, tc.Perm)
	}
	if limit := max(tc.WriteQueueNums, tc.ReadQueueNums); h.QueueID >= limit {
		return tc, errResponse(req, remoting.ResSystemError,
			"request queueId[%d] is illegal, topic %s has %d write / %d read queues", h.QueueID, h.Topic, tc.WriteQueueNums, tc.ReadQueueNums)
	}
	return tc, nil
}

// autoCreate creates an unknown topic as RocketMQ's
// createTopicInSendMessageMethod does: from a default topic that has the
// inherit perm (TBW102 when auto-creation is on), with
// min(defaultTopicQueueNums, the default topic's queues) queues, or as a
// one-queue %RETRY% topic.
func (s *sendService) autoCreate(ctx context.Context, sr *sendRequest) (meta.TopicConfig, *remoting.Command) {
	req, h := sr.req, sr.h
	var tc meta.TopicConfig
	if def, ok := s.inheritableTopic(h.DefaultTopic); ok {
		n := def.WriteQueueNums
		if h.DefaultTopic == protocol.DefaultTopic {
			n = min(n, s.settings.get().defaultQueueNums)
		}
		if h.DefaultTopicQueueNums > 0 {
			n = min(n, h.DefaultTopicQueueNums)
		}
		tc = meta.TopicConfig{Name: h.Topic, ReadQueueNums: n, WriteQueueNums: n, Perm: def.Perm &^ protocol.PermInherit}
	} else if group, ok := protocol.RetryGroup(h.Topic); ok {
		tc = retryTopicConfig(group)
	} else {
		return tc, errResponse(req, remoting.ResTopicNotExist, "topic[%s] not exist, apply first please!", h.Topic)
	}
	created, err := s.topics.ensure(ctx, tc)
	if err != nil {
		return tc, s.rep.proposeFailure(ctx, req, err)
	}
	s.log.Info("topic auto-created on send", "topic", h.Topic, "queues", created.WriteQueueNums, "producer", req.ExtFields[extBornHost])
	s.registered()
	return created, nil
}

// inheritableTopic returns the default topic a producer named, if new
// topics may be created from it.
func (s *sendService) inheritableTopic(name string) (meta.TopicConfig, bool) {
	if name == protocol.DefaultTopic {
		return defaultTopicConfig(), s.settings.get().autoCreateTopic
	}
	if name == "" {
		return meta.TopicConfig{}, false
	}
	t, ok := s.topics.topic(name)
	return t, ok && protocol.Inheritable(t.Perm)
}

// sendResponse is the SendMessageResponseHeader of a stored request.
func (s *sendService) sendResponse(sr *sendRequest, msgs []dledger.Message, res dledger.Result) *remoting.Command {
	req := sr.req
	if len(res.Messages) != len(msgs) || len(msgs) == 0 {
		return errResponse(req, remoting.ResSystemError, "stored %d of %d messages", len(res.Messages), len(msgs))
	}
	ids := make([]byte, 0, len(msgs)*(message.OffsetMsgIDLenV4+1))
	var size int64
	for i, r := range res.Messages {
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = append(ids, message.EncodeOffsetMsgID(s.records.storeHost, r.CommitOffset)...)
		size += int64(len(msgs[i].Record))
	}
	s.puts.messages.Add(int64(len(msgs)))
	s.puts.bytes.Add(size)
	s.countIn(sr, msgs)
	return sendAnswer(sr, string(ids), sr.queueID, res.Messages[0].QueueOffset)
}

// sendAnswer is the SendMessageResponseHeader of a send: the records'
// offsetMsgIds (comma-separated), the queue and the first queue offset.
func sendAnswer(sr *sendRequest, msgIDs string, queueID int32, queueOffset int64) *remoting.Command {
	resp := okResponse(sr.req)
	resp.ExtFields["msgId"] = msgIDs
	resp.ExtFields["queueId"] = strconv.Itoa(int(queueID))
	resp.ExtFields["queueOffset"] = strconv.FormatInt(queueOffset, 10)
	resp.ExtFields[message.PropertyMsgRegion] = regionID
	resp.ExtFields[message.PropertyTraceOn] = traceOn
	if !sr.h.Batch && message.TransactionValue(sr.h.SysFlag) == message.SysFlagTransactionPrepared {
		if u := sr.props[message.PropertyUniqKey]; u != "" {
			resp.ExtFields["transactionId"] = u
		}
	}
	return resp
}

// countIn counts a stored send in the metrics, under the topic the
// producer named (a delayed message is stored in SCHEDULE_TOPIC_XXXX).
func (s *sendService) countIn(sr *sendRequest, msgs []dledger.Message) {
	if s.metrics == nil {
		return
	}
	records := make([][]byte, len(msgs))
	for i := range msgs {
		records[i] = msgs[i].Record
	}
	s.metrics.messagesIn(sr.h.Topic, messageType(sr.props), records)
	if sr.toDLQ {
		s.metrics.sentToDLQ(sr.props[message.PropertyRetryTopic], sr.dlqGroup)
	}
}
