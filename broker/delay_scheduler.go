package broker

// The delay-level scheduler: on the leader, one loop per level reads the
// level's schedule queue from its committed progress. Messages of one
// level are due in queue order (same delay, increasing send time), so the
// loop delivers the due prefix and sleeps until the next message's deliver
// time, or until the queue grows. A delivery is one PutMessagesCommand
// carrying the rebuilt messages for their real queues and the level's new
// progress, pinned to the term the progress was loaded in: it commits as a
// whole or not at all, so across failovers each message is delivered
// exactly once. Any failure restarts the loop from committed progress.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/consumequeue"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/message"
)

const (
	// deliverBatch bounds the messages and bytes of one delivery entry.
	deliverBatch      = 64
	deliverBatchBytes = 1 << 20
	// idlePoll re-reads an idle schedule queue even without a wake-up.
	idlePoll = time.Second
)

// delayService is the broker's delay-level machinery.
type delayService struct {
	b      *Broker
	levels []time.Duration
}

func (d *delayService) services() []leaderService {
	out := make([]leaderService, len(d.levels))
	for i := range d.levels {
		q := int32(i)
		out[i] = leaderService{"delay-level-" + strconv.Itoa(i+1), func(ctx context.Context) error { return d.runLevel(ctx, q) }}
	}
	return out
}

// runLevel delivers level queueID+1 until ctx ends or something fails.
func (d *delayService) runLevel(ctx context.Context, queueID int32) error {
	b := d.b
	term, err := b.leaderBarrier(ctx)
	if err != nil {
		return err
	}
	progress, _ := b.node.Metadata().DelayOffset(queueID)
	key := dledger.QueueKey{Topic: ScheduleTopic, QueueID: queueID}
	for ctx.Err() == nil {
		grown := b.sinks.arrival.wait(key) // before reading: no lost wake-up
		due, next, wait, err := b.collectDue(key, progress, time.Now().UnixMilli())
		if err != nil {
			return err
		}
		if next != progress {
			if err := b.deliver(ctx, term, due, dledger.DelayProgress{QueueID: queueID, Offset: next}); err != nil {
				return err
			}
			progress = next
			continue
		}
		waitFor(ctx, grown, wait)
	}
	return nil
}

// waitFor sleeps d (idlePoll when d <= 0) or until grown closes or ctx ends.
func waitFor(ctx context.Context, grown <-chan struct{}, d time.Duration) {
	if d <= 0 {
		d = idlePoll
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-grown:
	case <-ctx.Done():
	}
}

// collectDue reads the schedule queue from offset and rebuilds the due
// prefix for its real queues. next is the progress after them (records
// retention removed are skipped); wait is how long until the first
// message not yet due, 0 if the queue holds none.
func (b *Broker) collectDue(key dledger.QueueKey, offset, nowMs int64) (due []dledger.Message, next int64, wait time.Duration, err error) {
	q, ok := b.cq.Lookup(key.Topic, key.QueueID)
	if !ok {
		return nil, offset, 0, nil
	}
	if minOff := q.MinOffset(); offset < minOff {
		return nil, minOff, 0, nil // retention removed the rest of the level
	}
	entries, err := q.Read(offset, deliverBatch, nil)
	if errors.Is(err, consumequeue.ErrOffsetOutOfRange) {
		return nil, max(offset, q.MinOffset()), 0, nil
	}
	if err != nil {
		return nil, offset, 0, fmt.Errorf("broker: reading %s/%d: %w", key.Topic, key.QueueID, err)
	}
	next, size := offset, 0
	for _, e := range entries {
		if e.TagsCode > nowMs {
			return due, next, time.Duration(e.TagsCode-nowMs) * time.Millisecond, nil
		}
		if size+int(e.Size) > deliverBatchBytes && len(due) > 0 {
			break
		}
		m, err := b.rebuildDue(e)
		if err != nil {
			return nil, offset, 0, err
		}
		if m != nil {
			due = append(due, *m)
			size += len(m.Record)
		}
		next++
	}
	return due, next, 0, nil
}

// rebuildDue reads one parked record and rebuilds it for its real topic and
// queue: DELAY removed, other properties kept. A record retention removed,
// or one without a real topic, is skipped (nil).
func (b *Broker) rebuildDue(e consumequeue.Entry) (*dledger.Message, error) {
	rec, err := b.clog.ReadMessage(nil, e.CommitOffset, int(e.Size))
	if errors.Is(err, commitlog.ErrOffsetNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("broker: reading parked message at %d: %w", e.CommitOffset, err)
	}
	m, _, err := message.DecodeExt(rec)
	if err != nil {
		return nil, fmt.Errorf("broker: decoding parked message at %d: %w", e.CommitOffset, err)
	}
	topic := m.Property(message.PropertyRealTopic)
	qid, qerr := strconv.Atoi(m.Property(message.PropertyRealQueueID))
	if topic == "" || qerr != nil || qid < 0 {
		b.log.Warn("parked message has no real queue; dropped", "commit_offset", e.CommitOffset, "real_topic", topic)
		return nil, nil
	}
	m.RemoveProperty(message.PropertyDelayLevel)
	m.RemoveProperty(message.PropertyTimerDeliverMS)
	m.RemoveProperty(message.PropertyTimerDelaySec)
	m.Topic, m.QueueID, m.StoreTimestamp = topic, int32(qid), 0
	dm, err := b.storedMessage(m)
	if err != nil {
		return nil, fmt.Errorf("broker: rebuilding parked message at %d: %w", e.CommitOffset, err)
	}
	return &dm, nil
}

// deliver commits msgs and the new progress as one entry of term.
func (b *Broker) deliver(ctx context.Context, term uint64, msgs []dledger.Message, progress ...dledger.DelayProgress) error {
	var cmd dledger.Command = &dledger.PutMessagesCommand{Messages: msgs, DelayProgress: progress, Term: term}
	if len(msgs) == 0 {
		// Only skipped records: nothing to duplicate, progress alone.
		cmd = &dledger.DelayProgressCommand{Progress: progress}
	}
	if _, err := b.propose(ctx, cmd); err != nil {
		return err
	}
	b.delivered.Add(int64(len(msgs)))
	return nil
}
