package dledger

import (
	"errors"
	"fmt"
	"sort"

	"github.com/raftmq/raftmq/consumequeue"
	"github.com/raftmq/raftmq/indexfile"
)

// The index store takes puts as the FSM makes them. Replay after a
// restart puts a message's keys again; queries return commit offsets that
// the broker dedupes and checks against the message anyway.
var _ IndexSink = (*indexfile.Store)(nil)

// ConsumeQueueSink dispatches applied messages to a consumequeue.Store.
type ConsumeQueueSink struct {
	Store *consumequeue.Store
}

var _ QueueSink = ConsumeQueueSink{}

// Append implements QueueSink with the store's idempotent AppendBatch.
func (s ConsumeQueueSink) Append(k QueueKey, first int64, es []QueueEntry) error {
	q, err := s.Store.Queue(k.Topic, k.QueueID)
	if err != nil {
		return err
	}
	return q.AppendBatch(first, es)
}

// Restored implements QueueSink. A queue that is behind the snapshot
// cannot be filled (those messages are not in this node's log), so its
// topic's queues are dropped and restarted at the snapshot's offsets;
// queues at or ahead of it are kept for idempotent replay. Entries of kept
// queues whose messages are no longer in the commitlog are trimmed by the
// broker's periodic CorrectMinOffset, as after retention.
func (s ConsumeQueueSink) Restored(next map[QueueKey]int64) error {
	behind := map[string]bool{}
	for k, n := range next {
		if q, ok := s.Store.Lookup(k.Topic, k.QueueID); !ok || q.MaxOffset() < n {
			behind[k.Topic] = true
		}
	}
	topics := make([]string, 0, len(behind))
	for t := range behind {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	var errs []error
	for _, t := range topics {
		if err := s.Store.DeleteTopic(t); err != nil {
			errs = append(errs, fmt.Errorf("dledger: reset consumequeue topic %s: %w", t, err))
		}
	}
	for k, n := range next {
		if !behind[k.Topic] {
			continue
		}
		q, err := s.Store.Queue(k.Topic, k.QueueID)
		if err == nil {
			err = q.SetMinOffset(n)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("dledger: restart consumequeue %s/%d at %d: %w", k.Topic, k.QueueID, n, err))
		}
	}
	return errors.Join(errs...)
}
