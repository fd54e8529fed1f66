package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// PullConsumer hands pulled messages to the application, which asks for
// them with Poll and commits explicitly (RocketMQ's lite pull consumer).
// Queues are assigned by the application (Assign) or by the group's
// rebalance (Subscribe); either way one long-poll loop per queue pulls
// ahead into a process queue with the push consumer's flow control.
//
// The position of a queue is the offset after the last message Poll
// returned from it; Commit stores the positions (in clustering on the
// brokers, in broadcasting in the local file). Commits are explicit only:
// Close does not commit.
type PullConsumer struct {
	gm      *groupMember
	fetched chan fetchedBatch
}

// fetchedBatch is what one pull found in one queue.
type fetchedBatch struct {
	qs   *queueState
	msgs []*message.MessageExt
}

// fetchedBuffer is how many pulled batches wait for Poll before the pull
// loops block.
const fetchedBuffer = 16

// NewPullConsumer returns a pull consumer of group configured by opts; an
// empty or invalid group (protocol.ValidateGroup) is an ErrInvalidOption.
// It does no I/O.
func NewPullConsumer(group string, opts ...PullConsumerOpt) (*PullConsumer, error) {
	cfg, err := newPullConfig(group, opts)
	if err != nil {
		return nil, err
	}
	gm, err := newGroupMember(&cfg.consumerConfig, true, "pull-consumer")
	if err != nil {
		return nil, err
	}
	p := &PullConsumer{gm: gm, fetched: make(chan fetchedBatch, fetchedBuffer)}
	gm.deliver = p.deliver
	return p, nil
}

// ClientID is the consumer's client id (ip@instance).
func (p *PullConsumer) ClientID() string { return p.gm.c.clientID }

// Subscribe consumes topic's messages whose tag matches expr ("*" or ""
// for all, "A || B"), on the queues the group's rebalance gives this
// consumer. Call it before Start; it cannot be combined with Assign.
func (p *PullConsumer) Subscribe(topic, expr string) error {
	return p.SubscribeSelector(topic, Tag(expr))
}

// SubscribeSelector consumes topic's messages that sel selects: a tag
// expression (Tag) or an SQL92 condition on their properties (SQL92),
// which the broker evaluates, on the queues the group's rebalance gives
// this consumer. Call it before Start; it cannot be combined with Assign.
func (p *PullConsumer) SubscribeSelector(topic string, sel MessageSelector) error {
	p.gm.mu.Lock()
	fixed := p.gm.fixed
	p.gm.mu.Unlock()
	if fixed {
		return fmt.Errorf("%w: Subscribe after Assign", ErrInvalidOption)
	}
	return p.gm.subscribe(topic, sel, nil)
}

// Assign consumes exactly queues, without rebalance, each from its
// committed offset (else WithConsumeFrom). Call it before Start; it cannot
// be combined with Subscribe.
func (p *PullConsumer) Assign(queues ...MessageQueue) error {
	gm := p.gm
	gm.mu.Lock()
	defer gm.mu.Unlock()
	switch {
	case gm.started:
		return ErrStarted
	case len(gm.subs) > 0 && !gm.fixed:
		return fmt.Errorf("%w: Assign after Subscribe", ErrInvalidOption)
	case len(queues) == 0:
		return fmt.Errorf("%w: no queue", ErrInvalidOption)
	}
	gm.fixed = true
	for _, q := range queues {
		if _, ok := gm.subs[q.Topic]; !ok {
			s, err := parseSubscription(q.Topic, protocol.SubAll)
			if err != nil {
				return err
			}
			gm.subs[q.Topic] = s
		}
		gm.pending = append(gm.pending, q)
	}
	return nil
}

// Start fetches the routes (ErrNoRoute for an unknown topic), heartbeats
// the brokers and starts pulling.
func (p *PullConsumer) Start(ctx context.Context) error {
	if err := p.gm.start(ctx); err != nil {
		_ = p.Close(ctx)
		return err
	}
	return nil
}

// Assignment returns the queues this consumer currently pulls, sorted.
func (p *PullConsumer) Assignment() []MessageQueue { return p.gm.assignment() }

// Poll returns the next batch pulled from one queue (at most
// WithPullBatchSize messages), waiting for one until ctx is done. The
// batch's queue position moves past it.
func (p *PullConsumer) Poll(ctx context.Context) ([]*message.MessageExt, error) {
	_, msgs, err := p.PollQueue(ctx)
	return msgs, err
}

// PollQueue is Poll also returning the batch's queue (for Seek).
func (p *PullConsumer) PollQueue(ctx context.Context) (MessageQueue, []*message.MessageExt, error) {
	p.gm.mu.Lock()
	started, closed := p.gm.started, p.gm.closed
	p.gm.mu.Unlock()
	switch {
	case closed:
		return MessageQueue{}, nil, ErrClosed
	case !started:
		return MessageQueue{}, nil, ErrNotStarted
	}
	for {
		select {
		case fb := <-p.fetched:
			if fb.qs.pq.isDropped() {
				continue // a seek or a rebalance made it stale
			}
			fb.qs.pq.remove(fb.msgs)
			return fb.qs.mq, fb.msgs, nil
		case <-ctx.Done():
			return MessageQueue{}, nil, ctx.Err()
		case <-p.gm.stop:
			return MessageQueue{}, nil, ErrClosed
		}
	}
}

// Commit stores the position of every assigned queue.
func (p *PullConsumer) Commit(ctx context.Context) error {
	ctx, cancel := withTimeout(ctx, p.gm.cfg.requestTimeout)
	defer cancel()
	return p.gm.commit(ctx, nil)
}

// Seek moves queue's position to offset: the next Poll of that queue
// returns the message at offset (or, if it is out of the queue's range,
// the broker's nearest offset), and Commit stores offset until then.
func (p *PullConsumer) Seek(queue MessageQueue, offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: negative offset", ErrInvalidOption)
	}
	gm := p.gm
	gm.mu.Lock()
	old, ok := gm.queues[queue]
	if !ok || gm.closed {
		gm.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrQueueNotAssigned, queue)
	}
	gm.queues[queue] = gm.startQueue(queue, offset, old.epoch+1)
	gm.mu.Unlock()
	old.cancel()
	old.pq.drop()
	<-old.done
	return nil
}

// SeekTimestamp moves queue's position to the first message stored at or
// after t (SEARCH_OFFSET_BY_TIMESTAMP).
func (p *PullConsumer) SeekTimestamp(ctx context.Context, queue MessageQueue, t time.Time) error {
	off, err := p.gm.searchOffset(ctx, queue, t)
	if err != nil {
		return err
	}
	return p.Seek(queue, off)
}

// Close stops pulling and closes the connections. It does not commit.
func (p *PullConsumer) Close(ctx context.Context) error {
	err := p.gm.shutdown(ctx, nil)
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

func (p *PullConsumer) deliver(ctx context.Context, qs *queueState, msgs []*message.MessageExt) bool {
	select {
	case p.fetched <- fetchedBatch{qs: qs, msgs: msgs}:
		return true
	case <-ctx.Done():
		return false
	}
}
