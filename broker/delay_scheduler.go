package broker

// The delay-level scheduler: on the leader, one loop per level reads the
// level's schedule queue from its committed progress. Messages of one
// level are due in queue order (same delay, increasing send time), so the
// loop delivers the due prefix and sleeps until the next message's deliver
// time, or until the queue grows. A delivery is one PutMessagesCommand
// carrying the rebuilt messages for their real queues and the level's new
// progress as its side command, pinned to the term the progress was
// loaded in: it commits as a whole or not at all, so across failovers each
// message is delivered exactly once. Any failure restarts the loop from
// committed progress.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wallclock"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/store"
)

const (
	// deliverBatch bounds the messages and bytes of one delivery entry.
	deliverBatch      = 64
	deliverBatchBytes = 1 << 20
)

// delayScheduler delivers the delay levels' due messages.
type delayScheduler struct {
	*scheduled
	levels []time.Duration
}

func (d *delayScheduler) services() []leaderService {
	out := make([]leaderService, len(d.levels))
	for i := range d.levels {
		q := int32(i)
		out[i] = leaderService{"delay-level-" + strconv.Itoa(i+1), func(ctx context.Context) error { return d.runLevel(ctx, q) }}
	}
	return out
}

// runLevel delivers level queueID+1 until ctx ends or something fails.
func (d *delayScheduler) runLevel(ctx context.Context, queueID int32) error {
	term, err := d.rep.barrier(ctx)
	if err != nil {
		return err
	}
	progress, _ := d.meta.DelayOffset(queueID)
	key := dledger.QueueKey{Topic: protocol.ScheduleTopic, QueueID: queueID}
	for ctx.Err() == nil {
		grown := d.store.WaitArrival(key) // before reading: no lost wake-up
		due, next, wait, err := d.collectDue(key, progress, wallclock.UnixMilli())
		if err != nil {
			return err
		}
		if next != progress {
			cmd := &meta.DelayProgressCommand{Progress: []meta.DelayProgress{{QueueID: queueID, Offset: next}}}
			if err := d.deliver(ctx, term, due, cmd); err != nil {
				return err
			}
			progress = next
			continue
		}
		waitFor(ctx, grown, wait)
	}
	return nil
}

// collectDue reads the schedule queue from offset and rebuilds the due
// prefix for its real queues. next is the progress after them (records
// retention removed are skipped); wait is how long until the first
// message not yet due, 0 if the queue holds none.
func (d *delayScheduler) collectDue(key dledger.QueueKey, offset, nowMs int64) (due []dledger.Message, next int64, wait time.Duration, err error) {
	entries, minOff, err := d.store.ReadEntries(key.Topic, key.QueueID, offset, deliverBatch, nil)
	if errors.Is(err, store.ErrOffsetOutOfRange) {
		return nil, max(offset, minOff), 0, nil // retention removed the rest of the level
	}
	if err != nil {
		return nil, offset, 0, fmt.Errorf("broker: reading %s/%d: %w", key.Topic, key.QueueID, err)
	}
	next, size := offset, 0
	latest := nowMs + d.levels[key.QueueID].Milliseconds()
	for _, e := range entries {
		// A due time beyond now plus the level's delay was computed by a
		// clock ahead of this one (a leader's before a failover, or this
		// node's before its clock was stepped back): it is due now, as
		// RocketMQ corrects it, not up to the size of the step later.
		if e.TagsCode > nowMs && e.TagsCode <= latest {
			return due, next, time.Duration(e.TagsCode-nowMs) * time.Millisecond, nil
		}
		if size+int(e.Size) > deliverBatchBytes && len(due) > 0 {
			break
		}
		m, err := d.rebuildDue(e)
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
