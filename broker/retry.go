package broker

// Retry and dead letters: CONSUMER_SEND_MSG_BACK (36), as RocketMQ's
// SendMessageProcessor.asyncConsumerSendMsgBack. Header: group, offset
// (the failed message's commit offset), delayLevel, originMsgId,
// originTopic, unitMode, maxReconsumeTimes. A follower forwards it to the
// leader, which reads the record at that commit offset from its commitlog
// (any committed record, before or after a failover) and stores a copy:
//
//   - in %RETRY%<group> (created if missing) with reconsumeTimes + 1,
//     RETRY_TOPIC = the first topic it was consumed from, ORIGIN_MESSAGE_ID
//     = the first delivery's msgId, and delay level 3 + reconsumeTimes (or
//     the level asked for), so it waits in SCHEDULE_TOPIC_XXXX first;
//   - in %DLQ%<group> instead, with the same history and no delay, when
//     reconsumeTimes ≥ maxReconsumeTimes (the header's value when given
//     and ≥ 0, else the subscription group's RetryMaxTimes, default 16)
//     or delayLevel < 0. The DLQ topic is created on demand with perm
//     WRITE only, so normal subscriptions cannot read it (an operator
//     grants read to drain it, as with RocketMQ).
//
// Answers: SUCCESS; SYSTEM_ERROR with a remark for a bad header or a
// commit offset with no record; the usual proposal failures otherwise.
// A client whose send-back fails re-sends the message to %RETRY%<group>
// itself; SEND_MESSAGE applies the same DLQ rule to it (retryToDLQ).

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

const (
	// defaultMaxReconsumeTimes is RocketMQ's default retry budget.
	defaultMaxReconsumeTimes = 16
	// retryBaseLevel: the n-th retry waits level retryBaseLevel + n.
	retryBaseLevel = 3
	dlqQueueNums   = 1
)

func (b *Broker) registerRetry() {
	b.handle(remoting.ReqConsumerSendMsgBack, b.consumerSendMsgBack)
}

// sendBackHeader is RocketMQ's ConsumerSendMsgBackRequestHeader.
type sendBackHeader struct {
	group       string
	offset      int64
	delayLevel  int
	maxTimes    int32
	hasMaxTimes bool
}

func parseSendBackHeader(ext map[string]string) (sendBackHeader, string) {
	h := sendBackHeader{group: ext["group"]}
	if h.group == "" {
		return h, "the custom field <group> is null"
	}
	var err error
	if h.offset, err = strconv.ParseInt(ext["offset"], 10, 64); err != nil || h.offset < 0 {
		return h, "header field offset " + strconv.Quote(ext["offset"]) + " is not a commit offset"
	}
	if v := ext["delayLevel"]; v != "" {
		if h.delayLevel, err = strconv.Atoi(v); err != nil {
			return h, "header field delayLevel " + strconv.Quote(v) + " is not a number"
		}
	}
	if v := ext["maxReconsumeTimes"]; v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return h, "header field maxReconsumeTimes " + strconv.Quote(v) + " is not a number"
		}
		h.maxTimes, h.hasMaxTimes = int32(n), n >= 0
	}
	return h, ""
}

// maxReconsumeTimes is the retry budget of group: asked, else the group's.
func (b *Broker) maxReconsumeTimes(group string, asked int32, has bool) int32 {
	if has {
		return asked
	}
	if g, ok := b.node.Metadata().SubscriptionGroup(group); ok && g.RetryMaxTimes > 0 {
		return g.RetryMaxTimes
	}
	return defaultMaxReconsumeTimes
}

func dlqTopicConfig(group string) dledger.TopicConfig {
	return dledger.TopicConfig{Name: DLQTopic(group), ReadQueueNums: dlqQueueNums, WriteQueueNums: dlqQueueNums, Perm: PermWrite}
}

func (b *Broker) consumerSendMsgBack(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.node.IsLeader() {
		return b.forward(ctx, req)
	}
	h, bad := parseSendBackHeader(req.ExtFields)
	if bad != "" {
		return errResponse(req, remoting.ResSystemError, "bad send-back header: %s", bad)
	}
	if ValidateTopic(RetryTopic(h.group)) != nil {
		return errResponse(req, remoting.ResSystemError, "group %q makes an invalid retry topic", h.group)
	}
	rec, err := b.readRecord(h.offset)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "look message by offset failed, %d: %v", h.offset, err)
	}
	m, _, err := message.DecodeExt(rec)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "look message by offset failed, %d: %v", h.offset, err)
	}
	toDLQ := m.ReconsumeTimes >= b.maxReconsumeTimes(h.group, h.maxTimes, h.hasMaxTimes) || h.delayLevel < 0
	tc := retryTopicConfig(h.group)
	if toDLQ {
		tc = dlqTopicConfig(h.group)
	}
	if tc, err = b.ensureTopic(ctx, tc); err != nil {
		return b.proposeFailure(ctx, req, err)
	}
	b.retryCopy(m, tc, toDLQ, h.delayLevel)
	return b.storeRetry(ctx, req, m)
}

// retryCopy turns the failed message m into its retry (or DLQ) copy.
func (b *Broker) retryCopy(m *message.MessageExt, tc dledger.TopicConfig, toDLQ bool, delayLevel int) {
	if m.Property(message.PropertyRetryTopic) == "" {
		m.SetProperty(message.PropertyRetryTopic, m.Topic)
	}
	if m.Property(message.PropertyOriginMessageID) == "" {
		m.SetProperty(message.PropertyOriginMessageID, m.MsgID())
	}
	m.RemoveProperty(message.PropertyDelayLevel)
	if !toDLQ {
		if delayLevel == 0 {
			delayLevel = retryBaseLevel + int(m.ReconsumeTimes)
		}
		m.SetDelayLevel(delayLevel)
	}
	m.Topic = tc.Name
	m.QueueID = rand.Int32N(max(tc.WriteQueueNums, 1))
	m.ReconsumeTimes++
	m.StoreHost, m.StoreTimestamp = b.storeHost, 0
}

// storeRetry stores the copy (parked when it has a delay level).
func (b *Broker) storeRetry(ctx context.Context, req *remoting.Command, m *message.MessageExt) *remoting.Command {
	deliverAt, parked, err := b.park(m, time.Now())
	if err != nil {
		return errResponse(req, remoting.ResMessageIllegal, "%v", err)
	}
	dm, err := b.storedMessage(m)
	if err != nil {
		return errResponse(req, remoting.ResMessageIllegal, "%s: %v", illegalRemark, err)
	}
	if parked {
		dm.TagsCode = deliverAt
	}
	pctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if _, err := b.propose(pctx, &dledger.PutMessagesCommand{Messages: []dledger.Message{dm}}); err != nil {
		return b.proposeFailure(ctx, req, err)
	}
	return okResponse(req)
}

// retryToDLQ applies the dead-letter rule to a client's own re-send to
// %RETRY%<group> (RocketMQ's handleRetryAndDLQ): once its reconsume count
// reaches the budget it is stored in %DLQ%<group>, undelayed. The count
// and budget come from the header, or from the RECONSUME_TIME and
// MAX_RECONSUME_TIMES properties when a client left them there.
func (b *Broker) retryToDLQ(ctx context.Context, req *remoting.Command, h sendHeader) (sendHeader, *remoting.Command) {
	group, ok := strings.CutPrefix(h.topic, RetryPrefix)
	if !ok || h.batch {
		return h, nil
	}
	props, _ := message.DecodeProperties([]byte(h.properties))
	times := h.reconsumeTimes
	if n, err := strconv.Atoi(props[message.PropertyReconsumeTime]); err == nil && int32(n) > times {
		times = int32(n)
	}
	asked, has := h.maxReconsumeTimes, hasExt(req, "maxReconsumeTimes", "l") && h.maxReconsumeTimes >= 0
	if n, err := strconv.Atoi(props[message.PropertyMaxReconsumeTimes]); err == nil && n >= 0 {
		asked, has = int32(n), true
	}
	if times < b.maxReconsumeTimes(group, asked, has) {
		return h, nil
	}
	tc, err := b.ensureTopic(ctx, dlqTopicConfig(group))
	if err != nil {
		return h, b.proposeFailure(ctx, req, err)
	}
	h.topic, h.queueID, h.toDLQ = tc.Name, 0, true
	return h, nil
}

// hasExt reports whether req's header carries any of keys.
func hasExt(req *remoting.Command, keys ...string) bool {
	for _, k := range keys {
		if _, ok := req.ExtFields[k]; ok {
			return true
		}
	}
	return false
}
