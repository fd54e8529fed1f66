package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

const (
	// suspectFor is how long an address that failed is tried only after
	// the other nodes of its group.
	suspectFor = 2 * time.Second
	// answeredSuspectFor is that time for a node that answered with a
	// failover code: it is alive, and soon worth asking again.
	answeredSuspectFor = 250 * time.Millisecond
	// maxFailoverBackoff caps the pause between failover attempts.
	maxFailoverBackoff = 100 * time.Millisecond
	// busyBackoff is the first pause after a SYSTEM_BUSY answer; it
	// doubles up to maxBusyBackoff.
	busyBackoff    = 2 * time.Millisecond
	maxBusyBackoff = 50 * time.Millisecond
)

// prepared is a message (or batch) ready to be sent to any queue.
type prepared struct {
	code    int16
	first   *message.Message // what the selector sees
	topic   string
	body    []byte
	sysFlag int32
	flag    int32
	props   string
	msgID   string
	oneway  bool
	batch   bool
	// queue, when set, is the queue of the first attempt (auto-batching
	// chose it); retries select again.
	queue *MessageQueue
}

func checkMessage(m *message.Message, maxSize int) error {
	switch {
	case m == nil:
		return fmt.Errorf("%w: nil message", ErrInvalidMessage)
	case m.Topic == "":
		return fmt.Errorf("%w: no topic", ErrInvalidMessage)
	case protocol.ValidateTopic(m.Topic) != nil:
		return fmt.Errorf("%w: %w", ErrInvalidMessage, protocol.ValidateTopic(m.Topic))
	case len(m.Body) == 0:
		return fmt.Errorf("%w: empty body", ErrInvalidMessage)
	case len(m.Body) > maxSize:
		return fmt.Errorf("%w: body of %d bytes, max %d", ErrMessageTooLarge, len(m.Body), maxSize)
	}
	if err := message.ValidateProperties(m.Properties); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	return nil
}

// preparePlain is prepare for the plain send methods: a half message is
// refused (a TransactionProducer sends those, and decides them), and a
// reply goes as SEND_REPLY_MESSAGE_V2.
func (p *Producer) preparePlain(m *message.Message) (*prepared, error) {
	if m != nil && m.Property(message.PropertyTransactionPrepared) != "" {
		return nil, fmt.Errorf("%w: a transaction half message (%s) must be sent with a TransactionProducer", ErrInvalidMessage, message.PropertyTransactionPrepared)
	}
	pm, err := p.prepare(m)
	if err != nil {
		return nil, err
	}
	if isReply(m) {
		pm.code = remoting.ReqSendReplyMessageV2
	}
	return pm, nil
}

// prepare validates msg, gives it a UNIQ_KEY and compresses its body.
func (p *Producer) prepare(m *message.Message) (*prepared, error) {
	if err := checkMessage(m, p.cfg.maxMessageSize); err != nil {
		return nil, err
	}
	if m.UniqKey() == "" {
		m.SetUniqKey(p.uniq.Next())
	}
	pm := &prepared{code: remoting.ReqSendMessageV2, first: m, topic: m.Topic, body: m.Body, flag: m.Flag,
		props: string(message.EncodeProperties(m.Properties)), msgID: m.UniqKey()}
	if p.cfg.compressThresh > 0 && len(m.Body) >= p.cfg.compressThresh {
		z, err := message.Compress(m.Body, p.cfg.compressLevel)
		if err != nil {
			return nil, err
		}
		pm.body, pm.sysFlag = z, message.SysFlagCompressed
	}
	return pm, nil
}

// prepareBatch validates a batch and encodes it.
func (p *Producer) prepareBatch(msgs []*message.Message) (*prepared, error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrInvalidMessage)
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		if err := checkMessage(m, p.cfg.maxMessageSize); err != nil {
			return nil, fmt.Errorf("batch message %d: %w", i, err)
		}
		if m.Topic != msgs[0].Topic {
			return nil, fmt.Errorf("%w: batch mixes topics %s and %s", ErrInvalidMessage, msgs[0].Topic, m.Topic)
		}
		if m.DelayLevel() > 0 {
			return nil, fmt.Errorf("%w: batch message %d has a delay level", ErrInvalidMessage, i)
		}
		if m.UniqKey() == "" {
			m.SetUniqKey(p.uniq.Next())
		}
		ids[i] = m.UniqKey()
	}
	body, err := message.EncodeBatch(msgs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if len(body) > p.cfg.maxMessageSize {
		return nil, fmt.Errorf("%w: batch of %d bytes, max %d", ErrMessageTooLarge, len(body), p.cfg.maxMessageSize)
	}
	return &prepared{code: remoting.ReqSendBatchMessage, first: msgs[0], topic: msgs[0].Topic, body: body,
		msgID: strings.Join(ids, ","), batch: true}, nil
}

// send delivers pm with retries and failover, bounded by ctx and the send
// timeout (see retry).
func (p *Producer) send(ctx context.Context, pm *prepared) (SendResult, error) {
	var res SendResult
	attempts, err := p.retry(ctx, "send to", pm.topic, func(actx context.Context, lastBroker string) (string, error) {
		r, broker, err := p.attempt(actx, pm, lastBroker)
		res = r
		return broker, err
	})
	if err != nil {
		return SendResult{}, err
	}
	res.Attempts = attempts
	return res, nil
}

// retry runs try, one attempt of a request about topic, until it
// succeeds, with a send's retries and failover, bounded by ctx and the
// send timeout; it returns the attempts made. try gets the broker group
// the previous attempt failed on ("" at first) and returns the group it
// tried. Each attempt may use at most a third of the send timeout (at
// least 500 ms), so a node that hangs leaves time to fail over; a request
// that succeeds at once derives one context, for its attempt. what and
// topic name the request in the error of one that gives up.
func (p *Producer) retry(ctx context.Context, what, topic string, try func(actx context.Context, lastBroker string) (string, error)) (int, error) {
	deadline := time.Now().Add(p.cfg.sendTimeout)
	var (
		lastBroker string
		rs         retryState
		// sctx is ctx bounded by the send deadline, for the failure path.
		sctx context.Context
	)
	for attempt := 1; ; attempt++ {
		actx, cancel := withDeadline(ctx, minTime(deadline, time.Now().Add(max(p.cfg.sendTimeout/3, 500*time.Millisecond))))
		broker, err := try(actx, lastBroker)
		cancel()
		if err == nil {
			return attempt, nil
		}
		if sctx == nil {
			var scancel context.CancelFunc
			sctx, scancel = withDeadline(ctx, deadline)
			defer scancel()
		}
		lastBroker = broker
		if sctx.Err() != nil || p.c.isClosed() {
			return attempt, gaveUp(what, topic, attempt, err)
		}
		if err := p.beforeRetry(sctx, what, topic, broker, attempt, err, &rs); err != nil {
			return attempt, err
		}
	}
}

// retryState is what one send's retries have used so far.
type retryState struct {
	retries int           // retries of retriable answers, within the budget
	backoff time.Duration // last pause of a failover
	busy    time.Duration // last pause after SYSTEM_BUSY
}

// beforeRetry prepares the next attempt of a request about topic after
// attempt failed with err on broker (refreshing the route, pausing as the
// answer asks, within sctx) or returns the error to give up with.
func (p *Producer) beforeRetry(sctx context.Context, what, topic, broker string, attempt int, err error, rs *retryState) error {
	switch {
	case isFailover(err) || isNoRoute(err):
		// The group is changing leader: refresh at once, retry soon.
		p.c.log.Debug("failing over", "request", what, "topic", topic, "broker", broker, "attempt", attempt, "error", err)
		if _, rerr := p.c.routes.refresh(sctx, topic); rerr != nil {
			p.c.log.Debug("route refresh failed", "topic", topic, "error", rerr)
		}
		if sleepCtx(sctx, rs.backoff) != nil {
			return gaveUp(what, topic, attempt, err)
		}
		rs.backoff = min(max(2*rs.backoff, p.cfg.failoverBackoff), maxFailoverBackoff)
	case isBusy(err):
		// The broker sheds load (a full connection or queue): back off
		// and try again until the send timeout, outside the retry budget.
		rs.busy = min(max(2*rs.busy, busyBackoff), maxBusyBackoff)
		if sleepCtx(sctx, rs.busy) != nil {
			return gaveUp(what, topic, attempt, err)
		}
	case IsRetriable(err) && rs.retries < p.cfg.retries:
		rs.retries++
		var e *Error
		if errors.As(err, &e) && e.Code == remoting.ResTopicNotExist {
			_, _ = p.c.routes.refresh(sctx, topic)
		}
	default:
		return err
	}
	return nil
}

// gaveUp is the error of a request ("send to" topic) that ran out of time
// after attempt attempts, the last failing with err.
func gaveUp(what, topic string, attempt int, err error) error {
	return fmt.Errorf("client: %s %s gave up after %d attempts: %w", what, topic, attempt, err)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func isNoRoute(err error) bool { return errors.Is(err, ErrNoRoute) }

func isBusy(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == remoting.ResSystemBusy
}

// attempt sends pm once: route, queue, address, request. It returns the
// broker group it tried; lastBroker is the one the previous attempt failed
// on.
func (p *Producer) attempt(ctx context.Context, pm *prepared, lastBroker string) (SendResult, string, error) {
	route, err := p.c.routes.get(ctx, pm.topic)
	if err != nil {
		return SendResult{}, "", err
	}
	if len(route.WriteQueues) == 0 {
		return SendResult{}, "", fmt.Errorf("%w %s: no writable queue", ErrNoRoute, pm.topic)
	}
	var q MessageQueue
	if pm.queue != nil && lastBroker == "" {
		q = *pm.queue
	} else {
		q = p.sel.Select(pm.first, route.WriteQueues, lastBroker)
	}
	addr, err := p.pickAddr(route, q.BrokerName)
	if err != nil {
		return SendResult{}, q.BrokerName, err
	}
	start := time.Now()
	res, err := p.sendOnce(ctx, addr, q, pm)
	p.fault.record(q.BrokerName, time.Since(start), err != nil && isFailover(err))
	p.suspectOn(addr, err)
	return res, q.BrokerName, err
}

// pickAddr returns the address to send to in a group: its leader (id 0),
// unless that is suspected dead, then the first unsuspected other node
// (which forwards to the leader); when all are suspected, the leader.
func (p *Producer) pickAddr(route *Route, broker string) (string, error) {
	bd, ok := route.Broker(broker)
	return p.pickGroupAddr(bd, ok, broker)
}

// pickGroupAddr is pickAddr for a group's addresses bd (ok: bd was found).
func (p *Producer) pickGroupAddr(bd protocol.BrokerData, ok bool, broker string) (string, error) {
	addrs := brokerAddrs(bd)
	if !ok || len(addrs) == 0 || bd.BrokerAddrs[0] == "" {
		return "", fmt.Errorf("%w: %s", ErrBrokerNotFound, broker)
	}
	leader := bd.BrokerAddrs[0]
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.After(p.suspect[leader]) {
		return leader, nil
	}
	best, bestUntil := leader, p.suspect[leader]
	for _, a := range addrs {
		u := p.suspect[a]
		if now.After(u) {
			return a, nil
		}
		if u.Before(bestUntil) {
			best, bestUntil = a, u
		}
	}
	return best, nil
}

// suspectOn suspects addr after a failed attempt: for suspectFor when it
// did not answer (a timeout, a broken connection), for answeredSuspectFor
// when it answered a failover code ("no leader right now"). A node that
// answers is alive and forwards to the new leader as soon as it knows one,
// often before the route names it: the next attempt goes to another node,
// but the one after may come back to it rather than to a silent leader.
func (p *Producer) suspectOn(addr string, err error) {
	switch {
	case isTransport(err):
		p.markSuspect(addr, suspectFor)
	case isFailover(err):
		p.markSuspect(addr, answeredSuspectFor)
	}
}

func (p *Producer) markSuspect(addr string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.suspect[addr] = time.Now().Add(d)
}

// noteLeaders clears the suspicion of a node a fresh route names as a
// group's new leader: it was suspected while it had no leader to forward
// to, but is now the one to write to.
func (p *Producer) noteLeaders(r *Route) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, bd := range r.Data.BrokerDatas {
		l := bd.BrokerAddrs[0]
		if l != "" && p.leaders[bd.BrokerName] != l {
			p.leaders[bd.BrokerName] = l
			delete(p.suspect, l)
		}
	}
}

// sendHeader is the SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE header, with the
// one-letter keys of SendMessageRequestHeaderV2.
func (p *Producer) sendHeader(q MessageQueue, pm *prepared) map[string]string {
	return protocol.SendMessageHeader{
		ProducerGroup: p.cfg.group, Topic: pm.topic,
		DefaultTopic: protocol.DefaultTopic, DefaultTopicQueueNums: defaultTopicQueueNums,
		QueueID: q.QueueID, SysFlag: pm.sysFlag, BornTimestamp: time.Now().UnixMilli(), Flag: pm.flag,
		Properties: pm.props, Batch: pm.batch, BrokerName: q.BrokerName,
	}.ExtV2()
}

// sendOnce sends pm to queue q at addr and parses the answer, bounded by
// ctx (send bounds each attempt).
func (p *Producer) sendOnce(ctx context.Context, addr string, q MessageQueue, pm *prepared) (SendResult, error) {
	req := remoting.NewRequest(pm.code, p.sendHeader(q, pm), pm.body)
	req.SerializeType = remoting.SerializeRocketMQ
	if pm.oneway {
		p.c.sign(req)
		if err := p.c.remote.InvokeOneway(ctx, addr, req); err != nil {
			return SendResult{}, fmt.Errorf("client: oneway send at %s: %w", addr, err)
		}
		return SendResult{Queue: q, MsgID: pm.msgID}, nil
	}
	resp, err := p.c.invoke(ctx, addr, req)
	if err != nil {
		return SendResult{}, err
	}
	return parseSendResponse(addr, req, resp, q, pm.msgID)
}

func parseSendResponse(addr string, req, resp *remoting.Command, q MessageQueue, msgID string) (SendResult, error) {
	res := SendResult{MsgID: msgID, Queue: q}
	switch resp.Code {
	case remoting.ResSuccess:
		res.Status = SendOK
	case remoting.ResFlushDiskTimeout:
		res.Status = SendFlushDiskTimeout
	case remoting.ResFlushSlaveTimeout:
		res.Status = SendFlushSlaveTimeout
	case remoting.ResSlaveNotAvailable:
		res.Status = SendSlaveNotAvailable
	default:
		return res, responseError(addr, req, resp)
	}
	ext := resp.ExtFields
	res.OffsetMsgID, res.TransactionID, res.RegionID = ext["msgId"], ext["transactionId"], ext[message.PropertyMsgRegion]
	if id, err := strconv.ParseInt(ext["queueId"], 10, 32); err == nil {
		res.Queue.QueueID = int32(id)
	}
	off, err := strconv.ParseInt(ext["queueOffset"], 10, 64)
	if err != nil {
		return res, fmt.Errorf("client: send answer from %s: queueOffset %q: %w", addr, ext["queueOffset"], err)
	}
	res.QueueOffset = off
	return res, nil
}
