package client

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// TraceOpt configures the clients that write message trace records: both
// producers and the push consumer.
type TraceOpt interface {
	ProducerOpt
	TransactionProducerOpt
	PushConsumerOpt
}

type traceOpt string

func (o traceOpt) applyProducer(c *producerConfig) { c.traceTopic = string(o) }
func (o traceOpt) applyTransaction(c *txConfig)    { c.traceTopic = string(o) }
func (o traceOpt) applyPush(c *pushConfig)         { c.traceTopic = string(o) }

// WithTrace turns on message trace, as the official clients' trace hook:
// a producer records each send (Pub: group, cost, outcome, store host and
// offsetMsgId), a push consumer each delivery to its handler (SubBefore)
// and the handler's outcome (SubAfter). Records are batched (up to 100, or
// 5 ms) and sent by an inner producer of group _INNER_TRACE_PRODUCER to
// topic (protocol.TraceTopic when empty), keyed by the messages' ids, in
// the official clients' layout: `raftmq message trace --id`,
// Admin.QueryTrace and RocketMQ's dashboard read them. A message with the
// property TRACE_ON=false is not traced. Tracing never fails or delays a
// send or a handler: records that find the buffer (1024) full are dropped
// and counted, and a trace send that fails is logged. Default off.
func WithTrace(topic string) TraceOpt {
	if topic == "" {
		topic = protocol.TraceTopic
	}
	return traceOpt(topic)
}

// Trace batching, as the official clients.
const (
	traceGroup     = "_INNER_TRACE_PRODUCER"
	traceBatch     = 100
	traceLinger    = 5 * time.Millisecond
	traceBuffer    = 1024
	traceMaxBody   = 118_000 // a trace message's body before it is split
	traceSendLimit = 5 * time.Second
)

// tracer collects one client's trace records and sends them in batches.
type tracer struct {
	topic   string
	host    string // the client's IP, as the records' ClientHost
	p       *Producer
	reqIDs  *message.UniqKeyGenerator
	in      chan protocol.TraceRecord
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once // closes stop
	runOnce sync.Once // starts run, or marks it done if it never ran
	dropped atomic.Int64
}

// newTracer returns the tracer of a client configured by cfg, or nil when
// cfg has trace off. Its inner producer shares cfg's name servers,
// timeouts and logger and has a client id of its own.
func newTracer(cfg *config, owner string) (*tracer, error) {
	if cfg.traceTopic == "" {
		return nil, nil
	}
	pc, err := defaultProducerConfig(traceGroup)
	if err != nil {
		return nil, err
	}
	pc.config = *cfg
	pc.traceTopic = ""
	pc.instanceName = "trace-" + owner + "-" + cfg.resolvedInstance()
	pc.logger = cfg.logger.Named("trace")
	pc.retries = 0
	pc.batchMessages = 0
	p, err := newProducer(pc)
	if err != nil {
		return nil, err
	}
	return &tracer{topic: cfg.traceTopic, host: p.c.ip.String(), p: p, reqIDs: message.NewUniqKeyGenerator(p.c.ip, os.Getpid()),
		in: make(chan protocol.TraceRecord, traceBuffer), stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// start starts the inner producer and the batching loop.
func (t *tracer) start(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if err := t.p.Start(ctx); err != nil {
		return err
	}
	t.runOnce.Do(func() { go t.run() })
	return nil
}

// close sends what is buffered (bounded by ctx) and stops the inner
// producer.
func (t *tracer) close(ctx context.Context) {
	if t == nil {
		return
	}
	t.once.Do(func() { close(t.stop) })
	t.runOnce.Do(func() { close(t.done) })
	select {
	case <-t.done:
	case <-ctx.Done():
	}
	_ = t.p.Close(ctx)
}

// traced says whether m is to be traced: not a trace message itself and
// not opted out with TRACE_ON=false.
func (t *tracer) traced(topic string, props func(string) string) bool {
	return topic != t.topic && props(message.PropertyTraceOn) != "false"
}

// add queues r; a full buffer drops it.
func (t *tracer) add(r protocol.TraceRecord) {
	select {
	case t.in <- r:
	default:
		if n := t.dropped.Add(1); n&(n-1) == 0 {
			t.p.c.log.Warn("trace buffer full: records dropped", "dropped", n)
		}
	}
}

func (t *tracer) run() {
	defer close(t.done)
	var batch []protocol.TraceRecord
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case r := <-t.in:
			if len(batch) == 0 {
				timer.Reset(traceLinger)
			}
			if batch = append(batch, r); len(batch) >= traceBatch {
				t.flush(batch)
				batch = nil
			}
		case <-timer.C:
			t.flush(batch)
			batch = nil
		case <-t.stop:
			for len(t.in) > 0 {
				batch = append(batch, <-t.in)
			}
			t.flush(batch)
			return
		}
	}
}

// flush sends batch as trace messages of at most traceMaxBody bytes each,
// keyed by the ids (and keys) of the messages their records are about.
func (t *tracer) flush(batch []protocol.TraceRecord) {
	var body []byte
	var keys []string
	for i, r := range batch {
		body = append(body, r.Encode()...)
		keys = append(keys, r.MsgID)
		if r.Keys != "" {
			keys = append(keys, strings.Fields(r.Keys)...)
		}
		if len(body) > traceMaxBody || i == len(batch)-1 {
			t.send(body, keys)
			body, keys = nil, nil
		}
	}
}

func (t *tracer) send(body []byte, keys []string) {
	slices.Sort(keys)
	m := &message.Message{Topic: t.topic, Body: body}
	m.SetKeys(slices.Compact(keys))
	ctx, cancel := context.WithTimeout(context.Background(), traceSendLimit)
	defer cancel()
	if _, err := t.p.Send(ctx, m); err != nil {
		t.p.c.log.Warn("trace records not sent", "topic", t.topic, "err", err)
	}
}

// Trace message types (the official clients' MessageType).
const (
	traceNormalMsg = 0
	traceHalfMsg   = 1
	traceDelayMsg  = 3
)

// SubAfter context codes (the official clients' ConsumeReturnType
// ordinals).
const (
	traceSuccessReturn   = 0
	traceExceptionReturn = 2
	traceFailedReturn    = 4
)

// pub records a send of msgs that started at start and ended with res
// and err (a batch's ids are res.MsgID comma-separated).
func (t *tracer) pub(group string, msgs []*message.Message, start time.Time, res SendResult, err error, msgType int) {
	if t == nil {
		return
	}
	now := time.Now()
	ids, offs := strings.Split(res.MsgID, ","), strings.Split(res.OffsetMsgID, ",")
	for i, m := range msgs {
		if !t.traced(m.Topic, m.Property) {
			continue
		}
		r := protocol.TraceRecord{Type: protocol.TracePub, Timestamp: now.UnixMilli(), RegionID: res.RegionID, Group: group,
			Topic: m.Topic, MsgID: m.UniqKey(), Tags: m.Tags(), Keys: strings.Join(m.Keys(), " "), BodyLength: len(m.Body),
			CostTime: now.Sub(start).Milliseconds(), MsgType: msgType, Success: err == nil && res.Status == SendOK, ClientHost: t.host}
		if r.MsgType == traceNormalMsg && (m.DelayLevel() > 0 || m.Property(message.PropertyTimerDeliverMS) != "") {
			r.MsgType = traceDelayMsg
		}
		if err == nil && i < len(ids) && i < len(offs) {
			r.MsgID, r.OffsetMsgID = ids[i], offs[i]
			if host, _, herr := message.DecodeOffsetMsgID(offs[i]); herr == nil {
				r.StoreHost = host.String()
			}
		}
		t.add(r)
	}
}

// subBefore records msgs handed to group's handler and returns the
// request id that links them to subAfter, "" when none is traced.
func (t *tracer) subBefore(group string, msgs []*message.MessageExt) string {
	if t == nil {
		return ""
	}
	req := ""
	now := time.Now().UnixMilli()
	for _, m := range msgs {
		if !t.traced(m.Topic, m.Property) {
			continue
		}
		if req == "" {
			req = t.reqIDs.Next()
		}
		t.add(protocol.TraceRecord{Type: protocol.TraceSubBefore, Timestamp: now, RegionID: m.Property(message.PropertyMsgRegion),
			Group: group, RequestID: req, MsgID: m.UniqKey(), RetryTimes: int(m.ReconsumeTimes), Keys: strings.Join(m.Keys(), " "),
			ClientHost: t.host})
	}
	return req
}

// subAfter records the handler's outcome for the msgs subBefore recorded
// under req; code is the official clients' ConsumeReturnType ordinal
// (0 success, 2 exception, 4 failed).
func (t *tracer) subAfter(group, req string, msgs []*message.MessageExt, start time.Time, ok bool, code int) {
	if t == nil || req == "" {
		return
	}
	now := time.Now()
	for _, m := range msgs {
		if !t.traced(m.Topic, m.Property) {
			continue
		}
		t.add(protocol.TraceRecord{Type: protocol.TraceSubAfter, RequestID: req, MsgID: m.UniqKey(),
			CostTime: now.Sub(start).Milliseconds(), Success: ok, Keys: strings.Join(m.Keys(), " "), ContextCode: code,
			Timestamp: now.UnixMilli(), Group: group})
	}
}
