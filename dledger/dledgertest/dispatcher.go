package dledgertest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/raftmq/raftmq/dledger"
)

// ErrMismatch and ErrGap mirror the consumequeue contract.
var (
	ErrMismatch = errors.New("dledgertest: consumequeue entry mismatch")
	ErrGap      = errors.New("dledgertest: consumequeue gap")
)

// Entry is what the dispatcher keeps of a message: a consumequeue entry.
type Entry struct {
	CommitOffset int64
	Size         int32
	TagsCode     int64
}

// MemDispatcher is an in-memory dledger.Dispatcher with the consumequeue's
// replay contract (equal entry no-op, different entry error, gap error).
// The harness keeps it across a node's restarts, as a disk would.
type MemDispatcher struct {
	mu     sync.Mutex
	queues map[dledger.QueueKey]*memQueue
}

type memQueue struct {
	min     int64 // first offset held (after a snapshot install)
	entries []Entry
}

var _ dledger.Dispatcher = (*MemDispatcher)(nil)

// NewMemDispatcher returns an empty dispatcher.
func NewMemDispatcher() *MemDispatcher {
	return &MemDispatcher{queues: map[dledger.QueueKey]*memQueue{}}
}

// Dispatch implements dledger.Dispatcher.
func (s *MemDispatcher) Dispatch(_ uint64, msgs []dledger.AppliedMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range msgs {
		m := &msgs[i]
		k := dledger.QueueKey{Topic: m.Topic, QueueID: m.QueueID}
		q := s.queues[k]
		if q == nil {
			q = &memQueue{}
			s.queues[k] = q
		}
		if err := q.append(k, m.QueueOffset, Entry{CommitOffset: m.CommitOffset, Size: m.Size, TagsCode: m.TagsCode}); err != nil {
			return err
		}
	}
	return nil
}

func (q *memQueue) append(k dledger.QueueKey, off int64, e Entry) error {
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

// Restored implements dledger.Dispatcher.
func (s *MemDispatcher) Restored(next, from map[dledger.QueueKey]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range next {
		q := s.queues[k]
		if q == nil || q.min+int64(len(q.entries)) < n {
			if f, ok := from[k]; ok && f < n {
				n = f
			}
			s.queues[k] = &memQueue{min: n}
		}
	}
	return nil
}

// Entries returns a copy of a queue's entries and its first offset.
func (s *MemDispatcher) Entries(k dledger.QueueKey) (min int64, entries []Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		return 0, nil
	}
	return q.min, append([]Entry(nil), q.entries...)
}

// Queues returns every queue key, sorted.
func (s *MemDispatcher) Queues() []dledger.QueueKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.SortedFunc(maps.Keys(s.queues), dledger.QueueKey.Compare)
}
