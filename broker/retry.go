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
// itself; SEND_MESSAGE applies the same DLQ rule to it (toDLQ).

import (
	"context"
	"math/rand/v2"
	"strconv"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wallclock"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

// retryBaseLevel: the n-th retry waits level retryBaseLevel + n.
const retryBaseLevel = 3

// retryService serves CONSUMER_SEND_MSG_BACK and decides when a retry is
// a dead letter.
type retryService struct {
	rep     *replica
	store   *store.Store
	meta    *meta.State
	topics  *topicTable
	records *recordBuilder
	metrics *nodeMetrics
}

func (s *retryService) register(m mux) {
	m.HandleFunc(remoting.ReqConsumerSendMsgBack, s.rep.leaderOnly(s.sendMsgBack))
}

// maxReconsumeTimes is the retry budget of group: asked, else the group's.
func (s *retryService) maxReconsumeTimes(group string, asked int32, has bool) int32 {
	if has {
		return asked
	}
	if g, ok := s.meta.SubscriptionGroup(group); ok && g.RetryMaxTimes > 0 {
		return g.RetryMaxTimes
	}
	return protocol.DefaultMaxReconsumeTimes
}

func (s *retryService) sendMsgBack(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := protocol.DecodeSendBackHeader(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "bad send-back header: %v", err)
	}
	if protocol.ValidateTopic(protocol.RetryTopic(h.Group)) != nil {
		return errResponse(req, remoting.ResSystemError, "group %q makes an invalid retry topic", h.Group)
	}
	rec, err := s.store.ReadRecord(h.Offset)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "look message by offset failed, %d: %v", h.Offset, err)
	}
	m, _, err := message.DecodeExt(rec)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "look message by offset failed, %d: %v", h.Offset, err)
	}
	toDLQ := m.ReconsumeTimes >= s.maxReconsumeTimes(h.Group, h.MaxReconsumeTimes, h.MaxReconsumeTimes >= 0) || h.DelayLevel < 0
	tc := retryTopicConfig(h.Group)
	if toDLQ {
		tc = dlqTopicConfig(h.Group)
	}
	if tc, err = s.topics.ensure(ctx, tc); err != nil {
		return s.rep.proposeFailure(ctx, req, err)
	}
	s.retryCopy(m, tc, toDLQ, int(h.DelayLevel))
	resp := s.storeRetry(ctx, req, m)
	if toDLQ && resp.Code == remoting.ResSuccess {
		s.metrics.sentToDLQ(m.Property(message.PropertyRetryTopic), h.Group)
	}
	return resp
}

// retryCopy turns the failed message m into its retry (or DLQ) copy.
func (s *retryService) retryCopy(m *message.MessageExt, tc meta.TopicConfig, toDLQ bool, delayLevel int) {
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
	m.StoreHost, m.StoreTimestamp = s.records.storeHost, 0
}

// storeRetry stores the copy (parked when it has a delay level).
func (s *retryService) storeRetry(ctx context.Context, req *remoting.Command, m *message.MessageExt) *remoting.Command {
	dm, err := s.records.parked(m, wallclock.Now())
	if err != nil {
		return errResponse(req, remoting.ResMessageIllegal, "%v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if _, err := s.rep.propose(pctx, &dledger.PutMessagesCommand{Messages: []dledger.Message{dm}}); err != nil {
		return s.rep.proposeFailure(ctx, req, err)
	}
	return okResponse(req)
}

// toDLQ applies the dead-letter rule to a client's own re-send to
// %RETRY%<group> (RocketMQ's handleRetryAndDLQ): once its reconsume count
// reaches the budget it is stored in %DLQ%<group>, undelayed. The count
// and budget come from the header, or from the RECONSUME_TIME and
// MAX_RECONSUME_TIMES properties when a client left them there. It
// redirects sr in place; a non-nil answer is a failure to create the DLQ.
func (s *retryService) toDLQ(ctx context.Context, sr *sendRequest) *remoting.Command {
	group, ok := protocol.RetryGroup(sr.h.Topic)
	if !ok || sr.h.Batch {
		return nil
	}
	times := sr.h.ReconsumeTimes
	if n, err := strconv.Atoi(sr.props[message.PropertyReconsumeTime]); err == nil && int32(n) > times {
		times = int32(n)
	}
	asked, has := sr.h.MaxReconsumeTimes, sr.h.HasMaxReconsumeTimes && sr.h.MaxReconsumeTimes >= 0
	if n, err := strconv.Atoi(sr.props[message.PropertyMaxReconsumeTimes]); err == nil && n >= 0 {
		asked, has = int32(n), true
	}
	if times < s.maxReconsumeTimes(group, asked, has) {
		return nil
	}
	tc, err := s.topics.ensure(ctx, dlqTopicConfig(group))
	if err != nil {
		return s.rep.proposeFailure(ctx, sr.req, err)
	}
	sr.h.Topic, sr.h.QueueID, sr.toDLQ, sr.dlqGroup = tc.Name, 0, true, group
	return nil
}
