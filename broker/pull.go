package broker

// Pull: PULL_MESSAGE (11), as RocketMQ's PullMessageProcessor over
// DefaultMessageStore.getMessage (store.GetMessage).
//
// A pull reads consumequeue entries from queueOffset, drops those whose tag
// hash the subscription does not want (the request's expression when
// sysFlag carries it, else what the group's heartbeats announced, else
// everything), and answers the matching records copied byte for byte from
// the commitlog, concatenated. Codes: 0 FOUND; 19 PULL_NOT_FOUND at the end
// of the queue; 20 PULL_RETRY_IMMEDIATELY when entries were read but none
// matched (or their bytes are gone), with nextBeginOffset past them;
// 21 PULL_OFFSET_MOVED for an offset outside the queue. Every answer
// carries nextBeginOffset, minOffset, maxOffset and suggestWhichBrokerId:
// 0 (the leader), or a follower while the consumer is far behind
// (follower_read.go).
//
// With the suspend bit a pull that finds nothing is held (long polling) up
// to suspendTimeoutMillis and answered as soon as its queue grows, or at
// once when the broker shuts down. Every node serves pulls of what it has
// applied.

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

const (
	// maxSuspend caps how long a pull is held.
	maxSuspend = 30 * time.Second
	// shortPoll is how long a suspendable pull waits when long polling is
	// off (RocketMQ's shortPollingTimeMills).
	shortPoll = time.Second
)

// pullService serves PULL_MESSAGE.
type pullService struct {
	store     *store.Store
	meta      *meta.State
	topics    *topicTable
	consumers *consumerManager
	offsets   *offsetCommitter
	subs      subscriptions
	settings  *runtimeSettings // longPollingEnable
	stop      <-chan struct{}  // closes at shutdown: held pulls answer
	held      atomic.Int64     // pulls being held
	metrics   *nodeMetrics
	reads     *followerReads // suggestWhichBrokerId
	// pulled is the next offset each group's last pull of a queue
	// delivered up to (meta.OffsetKey → int64): in flight is what lies
	// between it and the committed offset.
	pulled sync.Map
}

func (s *pullService) register(m mux) { m.HandleFunc(remoting.ReqPullMessage, s.handlePull) }

func (s *pullService) handlePull(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	pr, err := protocol.DecodePullMessageHeader(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	if resp := s.checkPull(req, pr); resp != nil {
		return resp
	}
	sub, resp := s.subscription(req, pr)
	if resp != nil {
		return resp
	}
	if pr.SysFlag&protocol.PullFlagCommitOffset != 0 && pr.CommitOffset >= 0 && s.consumers.messageModel(pr.ConsumerGroup) != protocol.Broadcasting {
		s.offsets.update(meta.OffsetKey{Group: pr.ConsumerGroup, Topic: pr.Topic, QueueID: pr.QueueID}, pr.CommitOffset)
	}
	res := s.pullHeld(ctx, pr, sub)
	if res.Status == store.Found {
		s.metrics.messagesOut(pr.Topic, pr.ConsumerGroup, countRecords(res.Body), len(res.Body))
		s.pulled.Store(meta.OffsetKey{Group: pr.ConsumerGroup, Topic: pr.Topic, QueueID: pr.QueueID}, res.NextBeginOffset)
	}
	return pullResponse(req, pr.QueueOffset, res, s.reads.suggest(pr.ConsumerGroup, res.Behind))
}

// checkPull refuses pulls of unknown topics, bad queues and groups or
// topics without read permission.
func (s *pullService) checkPull(req *remoting.Command, pr protocol.PullMessageHeader) *remoting.Command {
	if !protocol.Readable(s.meta.BrokerPermission()) {
		return errResponse(req, remoting.ResNoPermission, "the broker pulling message is forbidden (brokerPermission %d)", s.meta.BrokerPermission())
	}
	if g, ok := s.meta.SubscriptionGroup(pr.ConsumerGroup); ok && !g.ConsumeEnable {
		return errResponse(req, remoting.ResNoPermission, "subscription group no permission, %s", pr.ConsumerGroup)
	}
	tc, ok := s.topics.topic(pr.Topic)
	if !ok {
		return errResponse(req, remoting.ResTopicNotExist, "topic[%s] not exist, apply first please!", pr.Topic)
	}
	if !protocol.Readable(tc.Perm) {
		return errResponse(req, remoting.ResNoPermission, "the topic[%s] pulling message is forbidden", pr.Topic)
	}
	if pr.QueueID < 0 || pr.QueueID >= tc.ReadQueueNums {
		return errResponse(req, remoting.ResSystemError, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			pr.QueueID, pr.Topic, tc.ReadQueueNums, pr.ConsumerGroup)
	}
	return nil
}

// subscription is the filter of a pull: the request's expression when it
// carries one, else the group's from its heartbeats, else nil (all).
func (s *pullService) subscription(req *remoting.Command, pr protocol.PullMessageHeader) (*subscription, *remoting.Command) {
	if pr.SysFlag&protocol.PullFlagSubscription != 0 {
		sub, err := s.subs.parse(pr.Topic, pr.Subscription, pr.ExpressionType)
		if err != nil {
			return nil, subscriptionFailure(req, pr, err)
		}
		sub.ClassFilter = pr.SysFlag&protocol.PullFlagClassFilter != 0
		return sub, nil
	}
	sub := s.consumers.subscription(pr.ConsumerGroup, pr.Topic)
	if sub != nil && sub.invalid != nil {
		return nil, subscriptionFailure(req, pr, sub.invalid)
	}
	return sub, nil
}

// subscriptionFailure answers a pull whose subscription does not parse:
// SUBSCRIPTION_PARSE_FAILED with the parser's remark (an SQL92 error names
// its position), or SYSTEM_ERROR when SQL92 is switched off, as RocketMQ.
func subscriptionFailure(req *remoting.Command, pr protocol.PullMessageHeader, err error) *remoting.Command {
	if errors.Is(err, errPropertyFilterOff) {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	return errResponse(req, remoting.ResSubscriptionParseFailed, "parse the consumer's subscription[%s] failed, group: %s: %v", pr.Subscription, pr.ConsumerGroup, err)
}

// pullHeld reads the queue and, when the pull may be suspended and found
// nothing, holds it until the queue grows (then reads again), its timeout
// passes, the broker stops or the connection closes (then answers what a
// last read finds). Each held pull occupies only its own handler
// goroutine and no place in its connection's limit of running handlers,
// so other requests on the connection proceed.
func (s *pullService) pullHeld(ctx context.Context, pr protocol.PullMessageHeader, sub *subscription) store.GetResult {
	suspend := time.Duration(pr.SuspendTimeoutMillis) * time.Millisecond
	hold := pr.SysFlag&protocol.PullFlagSuspend != 0 && suspend > 0
	limit := min(suspend, maxSuspend)
	longPoll := s.settings.get().longPolling
	if !longPoll {
		limit = min(limit, shortPoll)
	}
	key := dledger.QueueKey{Topic: pr.Topic, QueueID: pr.QueueID}
	filter := sub.filter()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var arrived <-chan struct{}
		if hold && longPoll {
			// Taken before the read, so an append between the read and
			// the wait still wakes it.
			arrived = s.store.WaitArrival(key)
		}
		res := s.store.GetMessage(pr.Topic, pr.QueueID, pr.QueueOffset, pr.MaxMsgNums, filter)
		if !hold || pullCode(res.Status, pr.QueueOffset) != remoting.ResPullNotFound {
			return res
		}
		if timer == nil {
			timer = time.NewTimer(limit)
			s.held.Add(1)
			defer s.held.Add(-1)
			// A held pull waits for an event, not for work: it leaves its
			// connection's place for other requests (one pull per queue
			// may be held on one connection, whatever the queue count).
			remoting.Park(ctx)
		}
		select {
		case <-arrived:
		case <-timer.C:
			hold = false
		case <-s.stop:
			hold = false
		case <-ctx.Done():
			hold = false
		}
	}
}

// pullCode maps a read status to its pull answer, as PullMessageProcessor:
// offset 0 of an empty queue is "not found yet", any other offset of it
// "moved".
func pullCode(st store.GetStatus, offset int64) int16 {
	switch st {
	case store.Found:
		return remoting.ResSuccess
	case store.NoMatchedMessage, store.MessageWasRemoving:
		return remoting.ResPullRetryImmediately
	case store.NoMessageInQueue:
		if offset != 0 {
			return remoting.ResPullOffsetMoved
		}
		return remoting.ResPullNotFound
	case store.OffsetTooSmall, store.OffsetOverflowBadly:
		return remoting.ResPullOffsetMoved
	case store.OffsetOverflowOne, store.OffsetFoundNull:
		return remoting.ResPullNotFound
	default:
		return remoting.ResSystemError
	}
}

// pullResponse is the PullMessageResponseHeader of a read, suggesting
// brokerId suggest for the queue's next pull.
func pullResponse(req *remoting.Command, offset int64, r store.GetResult, suggest int64) *remoting.Command {
	var remark string
	if r.Err != nil {
		remark = r.Err.Error()
	}
	resp := remoting.NewResponse(req, pullCode(r.Status, offset), remark)
	if r.Status == store.Found {
		resp.Body = r.Body
	}
	resp.ExtFields["nextBeginOffset"] = strconv.FormatInt(r.NextBeginOffset, 10)
	resp.ExtFields["minOffset"] = strconv.FormatInt(r.MinOffset, 10)
	resp.ExtFields["maxOffset"] = strconv.FormatInt(r.MaxOffset, 10)
	resp.ExtFields["suggestWhichBrokerId"] = strconv.FormatInt(suggest, 10)
	return resp
}

// countRecords is how many stored records body concatenates (each starts
// with its TOTALSIZE).
func countRecords(body []byte) int {
	n := 0
	for len(body) >= 4 {
		size := int(binary.BigEndian.Uint32(body))
		if size <= 0 || size > len(body) {
			break
		}
		body, n = body[size:], n+1
	}
	return n
}

// pulledNext is where group's last pull of a queue ended, if it pulled.
func (s *pullService) pulledNext(k meta.OffsetKey) (int64, bool) {
	v, ok := s.pulled.Load(k)
	if !ok {
		return 0, false
	}
	return v.(int64), true
}
