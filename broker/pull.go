package broker

// Pull: PULL_MESSAGE (11), as RocketMQ's PullMessageProcessor over
// DefaultMessageStore.getMessage.
//
// A pull reads consumequeue entries from queueOffset, drops those whose tag
// hash the subscription does not want (the request's expression when
// sysFlag carries it, else what the group's heartbeats announced, else
// everything), and answers the matching records copied byte for byte from
// the commitlog, concatenated. Codes: 0 FOUND; 19 PULL_NOT_FOUND at the end
// of the queue; 20 PULL_RETRY_IMMEDIATELY when entries were read but none
// matched (or their bytes are gone), with nextBeginOffset past them;
// 21 PULL_OFFSET_MOVED for an offset outside the queue. Every answer
// carries nextBeginOffset, minOffset, maxOffset and suggestWhichBrokerId.
//
// With the suspend bit a pull that finds nothing is held (long polling) up
// to suspendTimeoutMillis and answered as soon as its queue grows, or at
// once when the broker shuts down. Every node serves pulls of what it has
// applied.

import (
	"context"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/remoting"
)

// Pull sysFlag bits, as RocketMQ's PullSysFlag. Frozen.
const (
	pullFlagCommitOffset = 1 << 0
	pullFlagSuspend      = 1 << 1
	pullFlagSubscription = 1 << 2
	pullFlagClassFilter  = 1 << 3
)

// Pull limits, as RocketMQ's defaults for messages in memory.
const (
	// maxPullMessages caps the messages of one answer
	// (maxTransferCountOnMessageInMemory).
	maxPullMessages = 32
	// maxPullBytes caps the bytes of one answer beyond its first message
	// (maxTransferBytesOnMessageInMemory).
	maxPullBytes = 256 << 10
	// maxPullScan caps the consumequeue entries one pull examines (16000
	// bytes of consumequeue in RocketMQ).
	maxPullScan = 800
	// maxSuspend caps how long a pull is held.
	maxSuspend = 30 * time.Second
	// shortPoll is how long a suspendable pull waits when long polling is
	// off (RocketMQ's shortPollingTimeMills).
	shortPoll = time.Second
)

// pullRequest is PullMessageRequestHeader.
type pullRequest struct {
	group        string
	topic        string
	queueID      int32
	queueOffset  int64
	maxMsgNums   int32
	sysFlag      int32
	commitOffset int64
	suspend      time.Duration
	subscription string
	subVersion   int64
	exprType     string
}

func (b *Broker) registerPull() {
	b.handle(remoting.ReqPullMessage, b.handlePull)
}

func (b *Broker) handlePull(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	pr, err := parsePullRequest(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	if resp := b.checkPull(req, pr); resp != nil {
		return resp
	}
	sub, resp := b.pullSubscription(req, pr)
	if resp != nil {
		return resp
	}
	if pr.sysFlag&pullFlagCommitOffset != 0 && pr.commitOffset >= 0 && b.consumers.messageModel(pr.group) != modelBroadcasting {
		b.offsetCommits.update(dledger.OffsetKey{Group: pr.group, Topic: pr.topic, QueueID: pr.queueID}, pr.commitOffset)
	}
	res := b.pullHeld(ctx, pr, sub)
	return res.response(req)
}

// parsePullRequest decodes the header; RocketMQ answers a missing or
// malformed required field with SYSTEM_ERROR.
func parsePullRequest(ext map[string]string) (pullRequest, error) {
	p := headerParser{ext: ext}
	pr := pullRequest{
		group:        p.str("consumerGroup"),
		topic:        p.str("topic"),
		queueID:      int32(p.int("queueId", 32, true)),
		queueOffset:  p.int("queueOffset", 64, true),
		maxMsgNums:   int32(p.int("maxMsgNums", 32, true)),
		sysFlag:      int32(p.int("sysFlag", 32, true)),
		commitOffset: p.int("commitOffset", 64, false),
		suspend:      time.Duration(p.int("suspendTimeoutMillis", 64, false)) * time.Millisecond,
		subscription: ext["subscription"],
		subVersion:   p.int("subVersion", 64, false),
		exprType:     ext["expressionType"],
	}
	return pr, p.err
}

// checkPull refuses pulls of unknown topics, bad queues and groups or
// topics without read permission.
func (b *Broker) checkPull(req *remoting.Command, pr pullRequest) *remoting.Command {
	if g, ok := b.node.Metadata().SubscriptionGroup(pr.group); ok && !g.ConsumeEnable {
		return errResponse(req, remoting.ResNoPermission, "subscription group no permission, %s", pr.group)
	}
	tc, ok := b.topic(pr.topic)
	if !ok {
		return errResponse(req, remoting.ResTopicNotExist, "topic[%s] not exist, apply first please!", pr.topic)
	}
	if tc.Perm&PermRead == 0 {
		return errResponse(req, remoting.ResNoPermission, "the topic[%s] pulling message is forbidden", pr.topic)
	}
	if pr.queueID < 0 || pr.queueID >= tc.ReadQueueNums {
		return errResponse(req, remoting.ResSystemError, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			pr.queueID, pr.topic, tc.ReadQueueNums, pr.group)
	}
	return nil
}

// pullSubscription is the filter of a pull: the request's expression when
// it carries one, else the group's from its heartbeats, else nil (all).
func (b *Broker) pullSubscription(req *remoting.Command, pr pullRequest) (*subscription, *remoting.Command) {
	if pr.sysFlag&pullFlagSubscription != 0 {
		sub, err := parseSubscription(pr.topic, pr.subscription, pr.exprType)
		if err != nil {
			return nil, errResponse(req, remoting.ResSubscriptionParseFailed, "parse the consumer's subscription[%s] failed, group: %s: %v", pr.subscription, pr.group, err)
		}
		sub.ClassFilter = pr.sysFlag&pullFlagClassFilter != 0
		return sub, nil
	}
	return b.consumers.subscription(pr.group, pr.topic), nil
}

// pullResult is the outcome of one read of a queue.
type pullResult struct {
	code           int16
	remark         string
	body           []byte
	next, min, max int64
}

func (r pullResult) response(req *remoting.Command) *remoting.Command {
	resp := remoting.NewResponse(req, r.code, r.remark)
	resp.Body = r.body
	resp.ExtFields["nextBeginOffset"] = strconv.FormatInt(r.next, 10)
	resp.ExtFields["minOffset"] = strconv.FormatInt(r.min, 10)
	resp.ExtFields["maxOffset"] = strconv.FormatInt(r.max, 10)
	resp.ExtFields["suggestWhichBrokerId"] = "0"
	return resp
}

// headerParser reads request header fields, remembering the first error.
type headerParser struct {
	ext map[string]string
	err error
}

func (p *headerParser) str(key string) string {
	v := p.ext[key]
	if v == "" && p.err == nil {
		p.err = &headerError{key: key}
	}
	return v
}

func (p *headerParser) int(key string, bits int, required bool) int64 {
	v, ok := p.ext[key]
	if !ok || v == "" {
		if required && p.err == nil {
			p.err = &headerError{key: key}
		}
		return 0
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil && p.err == nil {
		p.err = &headerError{key: key, value: v}
	}
	return n
}

// headerError is a missing or malformed request header field, worded as
// RocketMQ's RemotingCommand.decodeCommandCustomHeader.
type headerError struct{ key, value string }

func (e *headerError) Error() string {
	if e.value == "" {
		return "the custom field <" + e.key + "> is null"
	}
	return "the custom field <" + e.key + "> has an invalid value " + strconv.Quote(e.value)
}
