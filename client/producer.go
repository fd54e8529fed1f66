package client

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// SendStatus is how a broker reports a stored message (RocketMQ's
// SendStatus). Every status is a success: the message is stored.
type SendStatus int

// Send statuses.
const (
	// SendOK: stored and replicated to a majority of the group.
	SendOK SendStatus = iota
	// SendFlushDiskTimeout: stored, the flush timed out (code 10).
	SendFlushDiskTimeout
	// SendFlushSlaveTimeout: stored, replication timed out (code 12).
	SendFlushSlaveTimeout
	// SendSlaveNotAvailable: stored, no replica available (code 11).
	SendSlaveNotAvailable
)

// String returns RocketMQ's name of the status.
func (s SendStatus) String() string {
	switch s {
	case SendOK:
		return "SEND_OK"
	case SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return "SendStatus(" + strconv.Itoa(int(s)) + ")"
}

// SendResult describes a stored message (for a batch: the batch).
type SendResult struct {
	Status SendStatus
	// MsgID is the message's UNIQ_KEY, the id applications log and query;
	// for a batch the ids comma-separated.
	MsgID string
	// OffsetMsgID locates the stored record (store host and commit
	// offset), for ViewMessageByID; for a batch the ids comma-separated.
	OffsetMsgID string
	// Queue is the queue the message went to.
	Queue MessageQueue
	// QueueOffset is the message's offset in Queue (a batch: the first).
	QueueOffset int64
	// TransactionID is the broker's transaction id, if any.
	TransactionID string
	// RegionID is the broker's region (MSG_REGION).
	RegionID string
	// Attempts counts the requests the send took, 1 without retries.
	Attempts int
}

// String formats the result for logs.
func (r SendResult) String() string {
	return fmt.Sprintf("%s msgId=%s offsetMsgId=%s queue=%s offset=%d", r.Status, r.MsgID, r.OffsetMsgID, r.Queue, r.QueueOffset)
}

// Producer sends messages. Create it with NewProducer, call Start, then
// send from any number of goroutines; Close when done.
type Producer struct {
	cfg   *producerConfig
	c     *core
	uniq  *message.UniqKeyGenerator
	fault *faultSelector
	sel   Selector
	batch *batcher // nil when SendAsync does not batch

	mu      sync.Mutex
	started bool
	closed  bool
	async   sync.WaitGroup
	suspect map[string]time.Time // address → suspected dead until
	leaders map[string]string    // broker group → id 0 address last seen
	replies *replyWaiters        // processReplies: requests waiting for replies (request.go)
	trace   *tracer              // nil unless WithTrace
}

// NewProducer returns a producer of group configured by opts; an empty or
// invalid group (protocol.ValidateGroup) is an ErrInvalidOption. It does
// no I/O.
func NewProducer(group string, opts ...ProducerOpt) (*Producer, error) {
	cfg, err := newProducerConfig(group, opts)
	if err != nil {
		return nil, err
	}
	return newProducer(cfg)
}

// newProducer returns a producer configured by cfg.
func newProducer(cfg *producerConfig) (*Producer, error) {
	c, err := newCore(&cfg.config, "producer")
	if err != nil {
		return nil, err
	}
	c.autoCreate = true
	p := &Producer{cfg: cfg, c: c, uniq: message.NewUniqKeyGenerator(c.ip, os.Getpid()),
		fault: newFaultSelector(cfg.faultAvoidance), sel: cfg.selector,
		suspect: map[string]time.Time{}, leaders: map[string]string{}, replies: &processReplies}
	if p.sel == nil {
		p.sel = p.fault
	}
	if p.trace, err = newTracer(&cfg.config, cfg.group); err != nil {
		return nil, err
	}
	if cfg.batchMessages > 1 {
		p.batch = newBatcher(p)
	}
	c.addHeartbeatSource(func(hb *protocol.HeartbeatData) {
		hb.ProducerDataSet = append(hb.ProducerDataSet, protocol.ProducerData{GroupName: cfg.group})
	})
	c.onRoute(p.noteLeaders)
	c.handle(remoting.ReqPushReplyMessageToClient, p.onReply)
	return p, nil
}

// ClientID is the producer's client id (ip@instance).
func (p *Producer) ClientID() string { return p.c.clientID }

// Start starts the route refresh and heartbeat loops. It checks that a
// name server answers and fails (ErrNoNameServer) if none does.
func (p *Producer) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.started {
		return nil
	}
	ctx, cancel := withTimeout(ctx, p.cfg.requestTimeout)
	defer cancel()
	if _, err := p.c.routes.fetchData(ctx, protocol.DefaultTopic); err != nil && !isNoRoute(err) {
		return err
	}
	if err := p.c.start(); err != nil {
		return err
	}
	if err := p.trace.start(ctx); err != nil {
		return err
	}
	p.started = true
	return nil
}

// Close waits for pending asynchronous sends (until ctx is done), then
// stops the loops and closes every connection. Sends after Close fail
// with ErrClosed.
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.async.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("client: close: asynchronous sends still pending: %w", ctx.Err())
	}
	p.trace.close(ctx)
	p.c.close() // fails what is still pending; their callbacks then run
	<-done
	return err
}

// ready reports ErrNotStarted or ErrClosed; with async it also counts one
// asynchronous send in, so Close waits for it.
func (p *Producer) ready(async bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return ErrClosed
	case !p.started:
		return ErrNotStarted
	}
	if async {
		p.async.Add(1)
	}
	return nil
}

// Send sends msg and waits until it is stored. It sets the message's
// UNIQ_KEY if absent. Retries and failover (see the package doc) are
// bounded by ctx and the send timeout. A reply built by NewReplyMessage
// goes as SEND_REPLY_MESSAGE_V2, which the broker pushes to the
// requester. A transaction half message (TRAN_MSG) is refused: send it
// with a TransactionProducer.
func (p *Producer) Send(ctx context.Context, msg *message.Message) (SendResult, error) {
	if err := p.ready(false); err != nil {
		return SendResult{}, err
	}
	pm, err := p.preparePlain(msg)
	if err != nil {
		return SendResult{}, err
	}
	start := time.Now()
	res, err := p.send(ctx, pm)
	p.trace.pub(p.cfg.group, []*message.Message{msg}, start, res, err, traceNormalMsg)
	return res, err
}

// SendAsync sends msg without waiting; cb runs exactly once, on another
// goroutine, with the result or the error (also when the producer is not
// started or msg is invalid). Close waits for pending callbacks.
//
// Unless WithAsyncBatching(0, 0, 0) turns it off, concurrent SendAsync
// calls for one queue are coalesced into SEND_BATCH_MESSAGE requests, one
// in flight per queue (see WithAsyncBatching); the callbacks of one request
// run one after the other, so a slow callback delays its batch-mates'.
// Compressed, delayed, timer and half messages and sends to %RETRY% and
// %DLQ% topics go singly.
func (p *Producer) SendAsync(ctx context.Context, msg *message.Message, cb func(SendResult, error)) {
	if err := p.ready(true); err != nil {
		go cb(SendResult{}, err)
		return
	}
	am := &asyncMsg{ctx: ctx, m: msg, cb: cb, start: time.Now()}
	pm, err := p.preparePlain(msg)
	if err != nil {
		go p.finishAsync(am, SendResult{}, err)
		return
	}
	am.pm = pm
	if p.batch == nil || !batchable(msg, pm) {
		go p.sendAsyncSingle(am)
		return
	}
	p.batch.submit(am)
}

func (p *Producer) sendAsyncSingle(am *asyncMsg) {
	res, err := p.send(am.ctx, am.pm)
	p.finishAsync(am, res, err)
}

// finishAsync runs an asynchronous send's callback and counts it out.
func (p *Producer) finishAsync(am *asyncMsg, res SendResult, err error) {
	defer p.async.Done()
	if am.pm != nil {
		p.trace.pub(p.cfg.group, []*message.Message{am.m}, am.start, res, err, traceNormalMsg)
	}
	am.cb(res, err)
}

// SendOneway sends msg without waiting for the broker's answer: it returns
// once the request is written. A connection failure is failed over like a
// sync send; a failure the broker would answer is not seen.
func (p *Producer) SendOneway(ctx context.Context, msg *message.Message) error {
	if err := p.ready(false); err != nil {
		return err
	}
	pm, err := p.preparePlain(msg)
	if err != nil {
		return err
	}
	pm.oneway = true
	_, err = p.send(ctx, pm)
	return err
}

// SendBatch sends msgs, all of one topic and without delay levels, as one
// SEND_BATCH_MESSAGE: they are stored together in one queue, at
// consecutive offsets from the result's QueueOffset. Bodies are not
// compressed.
func (p *Producer) SendBatch(ctx context.Context, msgs []*message.Message) (SendResult, error) {
	if err := p.ready(false); err != nil {
		return SendResult{}, err
	}
	pm, err := p.prepareBatch(msgs)
	if err != nil {
		return SendResult{}, err
	}
	start := time.Now()
	res, err := p.send(ctx, pm)
	p.trace.pub(p.cfg.group, msgs, start, res, err, traceNormalMsg)
	return res, err
}

// SetDeliverAt makes msg a timer message delivered at t (millisecond
// precision; TIMER_DELIVER_MS), for brokers that support timer messages.
// Use msg.SetDelayLevel for RocketMQ's 18 fixed delay levels instead.
func SetDeliverAt(msg *message.Message, t time.Time) {
	msg.SetProperty(message.PropertyTimerDeliverMS, strconv.FormatInt(t.UnixMilli(), 10))
}

// DeliverAt returns the delivery time SetDeliverAt set, if any.
func DeliverAt(msg *message.Message) (time.Time, bool) {
	ms, err := strconv.ParseInt(msg.Property(message.PropertyTimerDeliverMS), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}
