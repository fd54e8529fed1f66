package dledgertest

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/raftmq/raftmq/dledger"
)

// ErrMismatch and ErrGap mirror the consumequeue contract.
var (
	ErrMismatch = errors.New("dledgertest: consumequeue entry mismatch")
	ErrGap      = errors.New("dledgertest: consumequeue gap")
)

// MemQueueSink is an in-memory dledger.QueueSink with the consumequeue's
// replay contract (equal entry no-op, different entry error, gap error).
// The harness keeps it across a node's restarts, as a disk would.
type MemQueueSink struct {
	mu     sync.Mutex
	queues map[dledger.QueueKey]*memQueue
}

type memQueue struct {
	min     int64 // first offset held (after a snapshot install)
	entries []dledger.QueueEntry
}

var _ dledger.QueueSink = (*MemQueueSink)(nil)

// NewMemQueueSink returns an empty sink.
func NewMemQueueSink() *MemQueueSink {
	return &MemQueueSink{queues: map[dledger.QueueKey]*memQueue{}}
}

// Append implements dledger.QueueSink.
func (s *MemQueueSink) Append(k dledger.QueueKey, first int64, es []dledger.QueueEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		q = &memQueue{}
		s.queues[k] = q
	}
	for i, e := range es {
		if err := q.append(k, first+int64(i), e); err != nil {
			return err
		}
	}
	return nil
}

func (q *memQueue) append(k dledger.QueueKey, off int64, e dledger.QueueEntry) error {
	max := q.min + int64(len(q.entries))
	switch {
	case off < q.min:
		return nil // below what a snapshot install left us: already superseded
	case off < max:
		if q.entries[off-q.min] != e {
			return fmt.Errorf("%w: %v@%d holds %+v, got %+v", ErrMismatch, k, off, q.entries[off-q.min], e)
		}
		return nil
	case off > max:
		return fmt.Errorf("%w: %v next is %d, got %d", ErrGap, k, max, off)
	}
	q.entries = append(q.entries, e)
	return nil
}

// Restored implements dledger.QueueSink.
func (s *MemQueueSink) Restored(next map[dledger.QueueKey]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range next {
		q := s.queues[k]
		if q == nil || q.min+int64(len(q.entries)) < n {
			s.queues[k] = &memQueue{min: n}
		}
	}
	return nil
}

// Entries returns a copy of a queue's entries and its first offset.
func (s *MemQueueSink) Entries(k dledger.QueueKey) (min int64, entries []dledger.QueueEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		return 0, nil
	}
	return q.min, append([]dledger.QueueEntry(nil), q.entries...)
}

// Queues returns every queue key, sorted.
func (s *MemQueueSink) Queues() []dledger.QueueKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]dledger.QueueKey, 0, len(s.queues))
	for k := range s.queues {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Topic != keys[j].Topic {
			return keys[i].Topic < keys[j].Topic
		}
		return keys[i].QueueID < keys[j].QueueID
	})
	return keys
}
