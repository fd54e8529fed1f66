package client

// Request-reply (RocketMQ 4.6+). A requester's message carries a
// correlation id (CORRELATION_ID), its own client id (REPLY_TO_CLIENT) and
// its timeout in seconds (TTL); it is sent and stored like any other. The
// broker stamps the cluster name (CLUSTER) on it. A consumer answers with
// NewReplyMessage, which addresses the reply to <cluster>_REPLY_TOPIC
// with MSG_TYPE "reply": Producer.Send sends such a message with
// SEND_REPLY_MESSAGE_V2, and the broker pushes it to the requester's
// connection as PUSH_REPLY_MESSAGE_TO_CLIENT, where the waiting Request
// (or RequestAsync callback) receives it. A reply that arrives after its
// request timed out, or that matches no request, is logged and dropped.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// maxReplyBody bounds an inflated reply body.
const maxReplyBody = 64 << 20

// ErrRequestTimeout is returned by Request (and passed to RequestAsync's
// callback) when no reply arrived within the timeout.
var ErrRequestTimeout = errors.New("client: request timed out waiting for its reply")

// replyWaiters are requests waiting for their replies, by correlation id.
// There is one table per process (processReplies), as the Java client's
// RequestFutureHolder: producers of one process that share a client id
// (the default instance name is the process id) share it on the brokers
// too, which push a reply to whichever connection of that client id they
// hold — so the producer a reply reaches may not be the one that asked.
type replyWaiters struct {
	mu sync.Mutex
	m  map[string]chan *message.MessageExt
}

// processReplies is every producer's reply table (correlation ids are
// UUIDs, unique in the process).
var processReplies replyWaiters

func (w *replyWaiters) add(id string) chan *message.MessageExt {
	ch := make(chan *message.MessageExt, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]chan *message.MessageExt{}
	}
	w.m[id] = ch
	w.mu.Unlock()
	return ch
}

func (w *replyWaiters) remove(id string) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

// deliver hands a reply to its waiter; false when none waits.
func (w *replyWaiters) deliver(id string, m *message.MessageExt) bool {
	w.mu.Lock()
	ch, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ok {
		ch <- m
	}
	return ok
}

// newCorrelationID is a random id in UUID form, as the official clients'.
func newCorrelationID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// prepareRequest marks msg as a request of this producer and registers
// its waiter.
func (p *Producer) prepareRequest(msg *message.Message, timeout time.Duration) (string, chan *message.MessageExt, error) {
	if timeout <= 0 {
		return "", nil, fmt.Errorf("%w: request timeout %v must be positive", ErrInvalidOption, timeout)
	}
	if msg == nil {
		return "", nil, fmt.Errorf("%w: nil message", ErrInvalidMessage)
	}
	if isReply(msg) {
		return "", nil, fmt.Errorf("%w: a reply message cannot be a request", ErrInvalidMessage)
	}
	id := newCorrelationID()
	msg.SetProperty(message.PropertyCorrelationID, id)
	msg.SetProperty(message.PropertyReplyToClient, p.c.clientID)
	msg.SetProperty(message.PropertyTTL, strconv.Itoa(max(1, int(timeout/time.Second))))
	return id, p.replies.add(id), nil
}

// Request sends msg and waits up to timeout for the consumer's reply
// (RocketMQ's request-reply). The send itself is bounded by ctx and the
// send timeout; the whole call by timeout. It fails with ErrRequestTimeout
// when no reply came in time.
func (p *Producer) Request(ctx context.Context, msg *message.Message, timeout time.Duration) (*message.MessageExt, error) {
	if err := p.ready(false); err != nil {
		return nil, err
	}
	id, ch, err := p.prepareRequest(msg, timeout)
	if err != nil {
		return nil, err
	}
	return p.exchange(ctx, msg, id, ch, timeout)
}

// exchange sends the prepared request msg and waits for its reply on ch,
// all within timeout, then drops the request's waiter.
func (p *Producer) exchange(ctx context.Context, msg *message.Message, id string, ch chan *message.MessageExt, timeout time.Duration) (*message.MessageExt, error) {
	defer p.replies.remove(id)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := p.Send(ctx, msg); err != nil {
		return nil, fmt.Errorf("client: request %s: send: %w", id, err)
	}
	return waitReply(ctx, id, ch)
}

// RequestAsync sends msg and returns; cb runs once, on another goroutine,
// with the reply or the error (ErrRequestTimeout after timeout).
func (p *Producer) RequestAsync(ctx context.Context, msg *message.Message, timeout time.Duration, cb func(*message.MessageExt, error)) {
	if err := p.ready(true); err != nil {
		go cb(nil, err)
		return
	}
	id, ch, err := p.prepareRequest(msg, timeout)
	if err != nil {
		go p.finishRequest(cb, nil, err)
		return
	}
	go func() {
		m, err := p.exchange(ctx, msg, id, ch, timeout)
		p.finishRequest(cb, m, err)
	}()
}

// finishRequest runs an asynchronous request's callback and counts it
// out, so Close waits for it.
func (p *Producer) finishRequest(cb func(*message.MessageExt, error), m *message.MessageExt, err error) {
	defer p.async.Done()
	cb(m, err)
}

func waitReply(ctx context.Context, id string, ch chan *message.MessageExt) (*message.MessageExt, error) {
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: correlation id %s", ErrRequestTimeout, id)
		}
		return nil, ctx.Err()
	}
}

// onReply is the PUSH_REPLY_MESSAGE_TO_CLIENT handler: it hands the reply
// to the request waiting for its correlation id.
func (p *Producer) onReply(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := protocol.DecodeReplyMessageHeader(req.ExtFields)
	if err != nil {
		return remoting.NewResponse(req, remoting.ResSystemError, "bad reply header: "+err.Error())
	}
	props, err := message.DecodeProperties([]byte(h.Properties))
	if err != nil {
		return remoting.NewResponse(req, remoting.ResSystemError, "bad reply properties: "+err.Error())
	}
	body := req.Body
	if h.SysFlag&message.SysFlagCompressed != 0 {
		if body, err = message.Decompress(body, maxReplyBody); err != nil {
			return remoting.NewResponse(req, remoting.ResSystemError, "bad compressed reply body: "+err.Error())
		}
	}
	m := &message.MessageExt{
		Message: message.Message{Topic: h.Topic, Flag: h.Flag, Properties: props, Body: body},
		QueueID: h.QueueID, SysFlag: h.SysFlag &^ message.SysFlagCompressed, BornTimestamp: h.BornTimestamp,
		StoreTimestamp: h.StoreTimestamp, ReconsumeTimes: h.ReconsumeTimes,
	}
	m.SetProperty(message.PropertyArriveTime, strconv.FormatInt(time.Now().UnixMilli(), 10))
	id := m.Property(message.PropertyCorrelationID)
	if !p.replies.deliver(id, m) {
		p.c.log.Warn("reply matches no waiting request (timed out?): dropped", "correlation_id", id, "from", conn.RemoteAddr())
	}
	return remoting.NewResponse(req, remoting.ResSuccess, "")
}

// NewReplyMessage builds the reply to a request a consumer received: the
// message to send with Producer.Send (to <cluster>_REPLY_TOPIC, MSG_TYPE
// "reply", the request's correlation id, requester and TTL). It fails if
// request is not a request (no CLUSTER, REPLY_TO_CLIENT or
// CORRELATION_ID property).
func NewReplyMessage(request *message.MessageExt, body []byte) (*message.Message, error) {
	if request == nil {
		return nil, fmt.Errorf("%w: nil request", ErrInvalidMessage)
	}
	for _, k := range []string{message.PropertyCluster, message.PropertyReplyToClient, message.PropertyCorrelationID} {
		if request.Property(k) == "" {
			return nil, fmt.Errorf("%w: the request has no %s property: not a request message", ErrInvalidMessage, k)
		}
	}
	r := &message.Message{Topic: protocol.ReplyTopic(request.Property(message.PropertyCluster)), Body: body}
	r.SetProperty(message.PropertyMsgType, protocol.ReplyMessageFlag)
	r.SetProperty(message.PropertyCorrelationID, request.Property(message.PropertyCorrelationID))
	r.SetProperty(message.PropertyReplyToClient, request.Property(message.PropertyReplyToClient))
	if ttl := request.Property(message.PropertyTTL); ttl != "" {
		r.SetProperty(message.PropertyTTL, ttl)
	}
	return r, nil
}

// isReply reports whether m is a reply message (sent with
// SEND_REPLY_MESSAGE_V2).
func isReply(m *message.Message) bool {
	return m.Property(message.PropertyMsgType) == protocol.ReplyMessageFlag
}
