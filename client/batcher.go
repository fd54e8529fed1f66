package client

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// Auto-batching of SendAsync. Messages for one (topic, queue) are coalesced
// into one SEND_BATCH_MESSAGE: a message goes at once when nothing is in
// flight for its queue; otherwise it waits for the in-flight request to
// return and goes with everything else that queued meanwhile (up to
// maxMessages and maxBytes per request; more becomes the next request).
// At most one request per queue is in flight, so the order in which one
// goroutine calls SendAsync for a queue is the order the messages are
// stored in (retries after a failure aside). The broker answers the
// comma-separated offsetMsgIds and the first queue offset; the others
// follow consecutively.

// asyncMsg is one SendAsync waiting in a batch.
type asyncMsg struct {
	ctx  context.Context
	m    *message.Message
	pm   *prepared
	size int // its size in a batch body
	cb   func(SendResult, error)
	// start is when SendAsync was called, for the trace's cost.
	start time.Time
}

type batchKey struct {
	topic string
	queue MessageQueue
}

// queueBatch is the state of one (topic, queue).
type queueBatch struct {
	pending  []*asyncMsg
	bytes    int
	inFlight bool
	timer    *time.Timer // linger timer, when armed
}

type batcher struct {
	p           *Producer
	maxMessages int
	maxBytes    int
	linger      time.Duration

	// sticky is set with the default selector: a topic's messages go to
	// one queue until stickyBatch wait on it, then the selector picks the next
	// (as Kafka's sticky partitioner). Round robin per message would give
	// every message a queue of its own once a topic has more queues than a
	// producer has messages in flight, and no batch would form.
	sticky bool

	mu     sync.Mutex
	queues map[batchKey]*queueBatch
	// current is, with sticky, each topic's queue being filled.
	current map[string]MessageQueue
	// waiting holds, per topic whose route is being fetched, the messages
	// that arrived meanwhile, in order.
	waiting map[string][]*asyncMsg
}

func newBatcher(p *Producer) *batcher {
	maxBytes := p.cfg.maxMessageSize
	if p.cfg.batchBytes > 0 {
		maxBytes = min(p.cfg.batchBytes, maxBytes)
	}
	return &batcher{p: p, maxMessages: p.cfg.batchMessages, maxBytes: maxBytes, linger: p.cfg.batchLinger,
		sticky: p.cfg.selector == nil, queues: map[batchKey]*queueBatch{}, current: map[string]MessageQueue{},
		waiting: map[string][]*asyncMsg{}}
}

// submit selects am's queue and queues it; without a cached route it waits
// (behind earlier messages of its topic) for the route to be fetched.
func (b *batcher) submit(am *asyncMsg) {
	topic := am.m.Topic
	b.mu.Lock()
	if w, ok := b.waiting[topic]; ok {
		b.waiting[topic] = append(w, am)
		b.mu.Unlock()
		return
	}
	if route, ok := b.p.c.routes.cached(topic); ok && len(route.WriteQueues) > 0 {
		out := b.addLocked(b.pickLocked(am.m, route.WriteQueues), am)
		b.mu.Unlock()
		b.start(out)
		return
	}
	b.waiting[topic] = []*asyncMsg{am}
	b.mu.Unlock()
	go func() {
		route, err := b.p.c.routes.get(am.ctx, topic)
		b.mu.Lock()
		w := b.waiting[topic]
		delete(b.waiting, topic)
		var outs []*pendingRun
		var singles []*asyncMsg
		for _, am := range w {
			if err != nil || len(route.WriteQueues) == 0 {
				singles = append(singles, am) // fails or retries as a single send does
				continue
			}
			if out := b.addLocked(b.pickLocked(am.m, route.WriteQueues), am); out != nil {
				outs = append(outs, out)
			}
		}
		b.mu.Unlock()
		for _, out := range outs {
			b.start(out)
		}
		for _, am := range singles {
			go b.p.sendAsyncSingle(am)
		}
	}()
}

// pendingRun is a batch taken for sending.
type pendingRun struct {
	key  batchKey
	msgs []*asyncMsg
}

func (b *batcher) start(r *pendingRun) {
	if r != nil {
		go b.run(r.key, r.msgs)
	}
}

// batchable reports whether the broker accepts m in a batch: not
// compressed (a batch has one sysFlag), no delay or timer, not a half
// message, not to a retry or dead-letter topic.
func batchable(m *message.Message, pm *prepared) bool {
	if pm.sysFlag != 0 || pm.code != remoting.ReqSendMessageV2 || protocol.IsRetryTopic(m.Topic) || protocol.IsDLQTopic(m.Topic) {
		return false
	}
	for _, k := range []string{message.PropertyDelayLevel, message.PropertyTimerDeliverMS,
		message.PropertyTimerDelaySec, message.PropertyTransactionPrepared} {
		if _, ok := m.Properties[k]; ok {
			return false
		}
	}
	return true
}

// stickyBatch is how many messages wait on the sticky queue before the
// next message moves on: enough for batching to pay, few enough that a
// burst on one queue does not leave its consumer behind (a pull takes 32
// messages; bursts of 256 tripled the end-to-end latency).
const stickyBatch = 64

// pickLocked selects m's queue: with sticky, the topic's current queue
// while fewer than stickyBatch messages (and a batch's bytes) wait on it
// and it is still writable.
func (b *batcher) pickLocked(m *message.Message, queues []MessageQueue) MessageQueue {
	if !b.sticky {
		return b.p.sel.Select(m, queues, "")
	}
	if q, ok := b.current[m.Topic]; ok && slices.Contains(queues, q) {
		qb := b.queues[batchKey{m.Topic, q}]
		if qb == nil || (len(qb.pending) < min(stickyBatch, b.maxMessages) && qb.bytes < b.maxBytes) {
			return q
		}
	}
	q := b.p.sel.Select(m, queues, "")
	b.current[m.Topic] = q
	return q
}

// addLocked queues am for queue q and returns what is due to be sent.
func (b *batcher) addLocked(q MessageQueue, am *asyncMsg) *pendingRun {
	am.size = message.MinBatchItemSize + len(am.m.Body) + message.PropertiesLen(am.m.Properties)
	key := batchKey{am.m.Topic, q}
	qb := b.queues[key]
	if qb == nil {
		qb = &queueBatch{}
		b.queues[key] = qb
	}
	qb.pending = append(qb.pending, am)
	qb.bytes += am.size
	switch {
	case qb.inFlight:
		// sent when the in-flight request returns
	case b.linger <= 0 || len(qb.pending) >= b.maxMessages || qb.bytes >= b.maxBytes:
		return &pendingRun{key, b.takeLocked(qb)}
	case qb.timer == nil:
		qb.timer = time.AfterFunc(b.linger, func() { b.flush(key) })
	}
	return nil
}

// flush sends the lingering messages of key if nothing is in flight.
func (b *batcher) flush(key batchKey) {
	b.mu.Lock()
	qb := b.queues[key]
	var out []*asyncMsg
	if qb != nil {
		qb.timer = nil
		if !qb.inFlight && len(qb.pending) > 0 {
			out = b.takeLocked(qb)
		}
	}
	b.mu.Unlock()
	if out != nil {
		b.run(key, out)
	}
}

// takeLocked removes the next request's worth of messages from qb and
// marks it in flight.
func (b *batcher) takeLocked(qb *queueBatch) []*asyncMsg {
	if qb.timer != nil {
		qb.timer.Stop()
		qb.timer = nil
	}
	n, bytes := 0, 0
	for n < len(qb.pending) && n < b.maxMessages && (n == 0 || bytes+qb.pending[n].size <= b.maxBytes) {
		bytes += qb.pending[n].size
		n++
	}
	out := qb.pending[:n:n]
	qb.pending = qb.pending[n:]
	if len(qb.pending) == 0 {
		qb.pending = nil
	}
	qb.bytes -= bytes
	qb.inFlight = true
	return out
}

// run sends batches for key until nothing is pending, then clears its
// in-flight mark (and forgets an idle queue).
func (b *batcher) run(key batchKey, out []*asyncMsg) {
	for out != nil {
		b.send(key.queue, out)
		b.mu.Lock()
		qb := b.queues[key]
		qb.inFlight = false
		out = nil
		if len(qb.pending) > 0 {
			out = b.takeLocked(qb)
		} else if qb.timer == nil {
			delete(b.queues, key)
		}
		b.mu.Unlock()
	}
}

// send sends msgs to q, singly if there is one, as a batch otherwise, and
// runs their callbacks.
func (b *batcher) send(q MessageQueue, msgs []*asyncMsg) {
	p := b.p
	live := msgs[:0:0]
	for _, am := range msgs {
		if err := am.ctx.Err(); err != nil {
			p.finishAsync(am, SendResult{}, err)
			continue
		}
		live = append(live, am)
	}
	if len(live) == 0 {
		return
	}
	if len(live) == 1 {
		b.sendSingly(q, live)
		return
	}
	b.sendBatch(q, live)
}

// sendSingly sends each of msgs to q on its own.
func (b *batcher) sendSingly(q MessageQueue, msgs []*asyncMsg) {
	for _, am := range msgs {
		am.pm.queue = &q
		res, err := b.p.send(am.ctx, am.pm)
		b.p.finishAsync(am, res, err)
	}
}

// sendBatch sends live, at least two messages, to q as one batch; if the
// broker refuses the batch as such, each on its own.
func (b *batcher) sendBatch(q MessageQueue, live []*asyncMsg) {
	p := b.p
	ms := make([]*message.Message, len(live))
	for i, am := range live {
		ms[i] = am.m
	}
	pm, err := p.prepareBatch(ms)
	if err == nil {
		pm.queue = &q
		var res SendResult
		// The batch is bounded by the send timeout from now, not by any one
		// message's context (each was checked above).
		res, err = p.send(context.Background(), pm)
		if err == nil {
			b.deliver(live, res)
			return
		}
	}
	if refusedBatch(err) {
		// The broker refused the batch as such (one message it will not
		// batch, a size limit): send each on its own.
		b.sendSingly(q, live)
		return
	}
	for _, am := range live {
		p.finishAsync(am, SendResult{}, err)
	}
}

// refusedBatch reports whether err is the broker refusing a batch's
// content, which its messages sent singly may not meet.
func refusedBatch(err error) bool {
	if errors.Is(err, ErrInvalidMessage) || errors.Is(err, ErrMessageTooLarge) {
		return true
	}
	var e *Error
	return errors.As(err, &e) && e.Code == remoting.ResMessageIllegal
}

// deliver splits a batch's result into each message's.
func (b *batcher) deliver(msgs []*asyncMsg, res SendResult) {
	offIDs := strings.Split(res.OffsetMsgID, ",")
	for i, am := range msgs {
		r := res
		r.MsgID = am.m.UniqKey()
		r.OffsetMsgID = ""
		if len(offIDs) == len(msgs) {
			r.OffsetMsgID = offIDs[i]
		}
		r.QueueOffset = res.QueueOffset + int64(i)
		b.p.finishAsync(am, r, nil)
	}
}
