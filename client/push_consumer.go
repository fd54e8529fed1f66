package client

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// PushConsumer consumes subscribed topics by long-polling their queues and
// calling a handler on a worker pool (RocketMQ's DefaultMQPushConsumer,
// concurrent mode). Create it with NewPushConsumer, Subscribe, Start;
// Close when done.
//
// In clustering (the default) the group's consumers split the queues
// (WithAllocateStrategy), reallocating at start, every 20 s and when a
// broker announces NOTIFY_CONSUMER_IDS_CHANGED; offsets are committed to
// the brokers every 5 s and on Close. Delivery is at least once: the
// committed offset of a queue is its smallest unacknowledged offset, so a
// message being retried holds it back and a restart or a rebalance
// redelivers from there.
type PushConsumer struct {
	cfg *pushConfig
	gm  *groupMember

	tasks    taskQueue
	stopWork chan struct{}
	stopping atomic.Bool
	workers  sync.WaitGroup
	retries  sync.WaitGroup
	hctx     context.Context // handlers' context: cancelled when Close gives up waiting
	hcancel  context.CancelFunc
	once     sync.Once
	relock   chan struct{} // orderly: renew the locks now
	// sendBackFn is sendBack; tests replace it to take the local path.
	sendBackFn func(MessageQueue, *message.MessageExt) error
	trace      *tracer // nil unless WithTrace
}

// consumeTask is one handler call's batch, all of one queue; without
// messages (orderly), a request to consume the queue's cache in order.
type consumeTask struct {
	qs   *queueState
	msgs []*message.MessageExt
}

// NewPushConsumer returns a push consumer of group configured by opts; an
// empty or invalid group (protocol.ValidateGroup) is an ErrInvalidOption.
// It does no I/O.
func NewPushConsumer(group string, opts ...PushConsumerOpt) (*PushConsumer, error) {
	cfg, err := newPushConfig(group, opts)
	if err != nil {
		return nil, err
	}
	p := &PushConsumer{cfg: cfg, stopWork: make(chan struct{})}
	gm, err := newGroupMember(&cfg.consumerConfig, false, "push-consumer")
	if err != nil {
		return nil, err
	}
	p.gm = gm
	if p.trace, err = newTracer(&cfg.config, group); err != nil {
		return nil, err
	}
	gm.deliver = p.deliver
	gm.commitEvery = cfg.commitEvery
	gm.orderly, gm.workers = cfg.orderly, cfg.goroutines
	p.sendBackFn = p.sendBack
	p.tasks.notify = make(chan struct{}, 1)
	if cfg.orderly {
		p.setupOrderly()
	}
	p.hctx, p.hcancel = context.WithCancel(context.Background())
	return p, nil
}

// ClientID is the consumer's client id (ip@instance), as the group's
// consumer list shows it.
func (p *PushConsumer) ClientID() string { return p.gm.c.clientID }

// Subscribe consumes topic's messages whose tag matches expr ("*" or ""
// for all, "A || B" for either tag) with h. Call it before Start; a second
// call for a topic replaces the first.
func (p *PushConsumer) Subscribe(topic, expr string, h MessageHandler) error {
	return p.SubscribeSelector(topic, Tag(expr), h)
}

// SubscribeSelector consumes topic's messages that sel selects with h: a
// tag expression (Tag) or an SQL92 condition on their properties (SQL92),
// which the broker evaluates. Call it before Start; a second call for a
// topic replaces the first.
func (p *PushConsumer) SubscribeSelector(topic string, sel MessageSelector, h MessageHandler) error {
	if h == nil {
		return ErrInvalidOption
	}
	return p.gm.subscribe(topic, sel, h)
}

// Start starts the workers, fetches the routes (failing with ErrNoRoute
// for an unknown topic), heartbeats the brokers, takes the consumer's
// share of queues and starts pulling them.
func (p *PushConsumer) Start(ctx context.Context) error {
	p.once.Do(func() {
		for range p.cfg.goroutines {
			p.workers.Add(1)
			go p.work()
		}
	})
	if err := p.gm.start(ctx); err != nil {
		_ = p.Close(ctx)
		return err
	}
	if err := p.trace.start(ctx); err != nil {
		_ = p.Close(ctx)
		return err
	}
	if p.relock != nil {
		p.runLockRenewal()
	}
	return nil
}

// Assignment returns the queues this consumer currently pulls, sorted.
func (p *PushConsumer) Assignment() []MessageQueue { return p.gm.assignment() }

// Close stops pulling, waits for the handlers running (their context is
// cancelled when ctx is done), commits the offsets and closes the
// connections; the brokers then tell the group to rebalance. Batches
// pulled but not yet handed to a handler are left to the next owner of
// their queue.
func (p *PushConsumer) Close(ctx context.Context) error {
	return p.gm.shutdown(ctx, p.finish)
}

func (p *PushConsumer) finish(ctx context.Context) {
	p.stopping.Store(true)
	close(p.stopWork)
	done := make(chan struct{})
	go func() {
		p.workers.Wait()
		p.retries.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		p.hcancel()
		<-done
	}
	p.hcancel()
	p.trace.close(ctx)
}

// deliver queues msgs for the workers in batches. It never blocks: the
// process queue's thresholds bound what a queue has in flight, as
// RocketMQ's unbounded consume executor queue.
func (p *PushConsumer) deliver(_ context.Context, qs *queueState, msgs []*message.MessageExt) bool {
	if p.cfg.orderly {
		p.tasks.push(consumeTask{qs: qs}) // consumeOrderly takes them in order
		return true
	}
	n := p.cfg.batchSize
	for i := 0; i < len(msgs); i += n {
		p.tasks.push(consumeTask{qs: qs, msgs: msgs[i:min(i+n, len(msgs))]})
	}
	return true
}

func (p *PushConsumer) work() {
	defer p.workers.Done()
	for {
		t, ok := p.tasks.pop(p.stopWork)
		if !ok {
			return
		}
		if !p.stopping.Load() {
			p.consume(t)
		}
	}
}

// taskQueue is an unbounded FIFO of batches for the workers.
type taskQueue struct {
	mu     sync.Mutex
	items  []consumeTask
	notify chan struct{} // capacity 1: "items may be non-empty"
}

func (q *taskQueue) push(t consumeTask) {
	q.mu.Lock()
	q.items = append(q.items, t)
	q.mu.Unlock()
	q.signal()
}

func (q *taskQueue) signal() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// pop takes the oldest batch, waiting for one until stop is closed.
func (q *taskQueue) pop(stop <-chan struct{}) (consumeTask, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			t := q.items[0]
			q.items[0] = consumeTask{}
			q.items = q.items[1:]
			more := len(q.items) > 0
			q.mu.Unlock()
			if more {
				q.signal() // wake the next worker
			}
			return t, true
		}
		q.mu.Unlock()
		select {
		case <-q.notify:
		case <-stop:
			return consumeTask{}, false
		}
	}
}

// consume runs the handler on one batch and acknowledges or retries it.
func (p *PushConsumer) consume(t consumeTask) {
	if t.qs.pq.isDropped() {
		return // the queue is someone else's now
	}
	if t.msgs == nil {
		p.consumeOrderly(t.qs)
		return
	}
	p.restoreRetryTopic(t.msgs)
	if p.handle(t.msgs) == ConsumeSuccess {
		t.qs.pq.remove(t.msgs)
		return
	}
	p.retry(t)
}

// restoreRetryTopic gives messages of %RETRY%group their original topic,
// as RocketMQ's resetRetryTopic.
func (p *PushConsumer) restoreRetryTopic(msgs []*message.MessageExt) {
	rt := protocol.RetryTopic(p.gm.cfg.group)
	for _, m := range msgs {
		if orig := m.Property(message.PropertyRetryTopic); orig != "" && m.Topic == rt {
			m.Topic = orig
		}
	}
}

// handle calls the subscription's handler; a panic is a retry.
func (p *PushConsumer) handle(msgs []*message.MessageExt) (res ConsumeResult) {
	p.gm.mu.Lock()
	sub := p.gm.subs[msgs[0].Topic]
	if sub == nil || sub.handler == nil {
		for _, s := range p.gm.subs {
			if s.handler != nil {
				sub = s
				break
			}
		}
	}
	p.gm.mu.Unlock()
	if sub == nil {
		return ConsumeRetryLater
	}
	start, req := time.Now(), p.trace.subBefore(p.gm.cfg.group, msgs)
	code := traceExceptionReturn
	defer func() {
		if r := recover(); r != nil {
			p.gm.c.log.Error("handler panicked", "topic", msgs[0].Topic, "panic", r)
			res = ConsumeRetryLater
		}
		p.trace.subAfter(p.gm.cfg.group, req, msgs, start, res == ConsumeSuccess, code)
		p.gm.stats.consumed(msgs[0].Topic, len(msgs), res == ConsumeSuccess, time.Since(start))
	}()
	res = sub.handler(p.hctx, msgs)
	code = traceFailedReturn
	if res == ConsumeSuccess {
		code = traceSuccessReturn
	}
	return res
}

// retry sends a failed batch back to the broker (CONSUMER_SEND_MSG_BACK)
// message by message; those it could not send back stay in the process
// queue, holding the committed offset, and are consumed again locally
// after the local retry delay with reconsumeTimes+1, as RocketMQ does. In
// broadcasting failed messages are dropped, as in RocketMQ.
func (p *PushConsumer) retry(t consumeTask) {
	if p.cfg.model == Broadcasting {
		p.gm.c.log.Warn("broadcasting: dropping messages the handler failed", "queue", t.qs.mq.String(), "count", len(t.msgs))
		t.qs.pq.remove(t.msgs)
		return
	}
	var sent, kept []*message.MessageExt
	for _, m := range t.msgs {
		if err := p.sendBackFn(t.qs.mq, m); err != nil {
			p.gm.c.log.Debug("send back failed, retrying locally", "msgId", m.MsgID(), "error", err)
			m.ReconsumeTimes++
			kept = append(kept, m)
			continue
		}
		sent = append(sent, m)
	}
	if len(sent) > 0 {
		t.qs.pq.remove(sent)
	}
	if len(kept) == 0 {
		return
	}
	p.retries.Add(1)
	go func() {
		defer p.retries.Done()
		timer := time.NewTimer(p.cfg.retryDelay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-p.stopWork:
			return
		}
		p.tasks.push(consumeTask{qs: t.qs, msgs: kept})
	}()
}

// sendBack is CONSUMER_SEND_MSG_BACK of m to the leader of its queue's
// group: the broker stores it in %RETRY%group with delay level
// 3+reconsumeTimes (delayLevel 0), or in %DLQ%group past the maximum.
func (p *PushConsumer) sendBack(mq MessageQueue, m *message.MessageExt) error {
	ext := sendBackHeader(p.gm.cfg.group, m, p.cfg.maxReconsume)
	ctx, cancel := context.WithTimeout(p.hctx, p.gm.cfg.requestTimeout)
	defer cancel()
	_, err := p.gm.callLeader(ctx, mq, remoting.NewRequest(remoting.ReqConsumerSendMsgBack, ext, nil))
	return err
}

// sendBackHeader is CONSUMER_SEND_MSG_BACK's header for m: delay level 0
// (the broker's 3+reconsumeTimes), m's original id.
func sendBackHeader(group string, m *message.MessageExt, maxReconsume int) map[string]string {
	origin := m.Property(message.PropertyOriginMessageID)
	if origin == "" {
		origin = m.UniqKey()
	}
	if origin == "" {
		origin = m.MsgID()
	}
	return protocol.SendBackHeader{Group: group, Offset: m.CommitLogOffset, DelayLevel: 0,
		OriginMsgID: origin, OriginTopic: m.Topic, MaxReconsumeTimes: int32(maxReconsume)}.Ext()
}
