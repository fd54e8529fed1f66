package dledger

import (
	"cmp"
	"sync"
)

// QueueKey names one message queue.
type QueueKey struct {
	Topic   string
	QueueID int32
}

// counters is the part of the applied state dledger itself owns: the
// offsets the leader assigns from. Every field changes only by applying
// committed entries, so it is identical on every replica at the same
// applied index.
type counters struct {
	mu         sync.RWMutex
	queueNext  map[QueueKey]int64 // next queue offset of each queue
	commitNext int64              // next commit offset
	applied    uint64             // raft index of the last applied entry
}

func newCounters() *counters { return &counters{queueNext: map[QueueKey]int64{}} }

// copyQueues copies the queue counters.
func (s *counters) copyQueues() map[QueueKey]int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	q := make(map[QueueKey]int64, len(s.queueNext))
	for k, v := range s.queueNext {
		q[k] = v
	}
	return q
}

// snapshot copies the counters a new leader starts from.
func (s *counters) snapshot() (map[QueueKey]int64, int64) {
	q := s.copyQueues()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return q, s.commitNext
}

func (s *counters) setApplied(index uint64) {
	s.mu.Lock()
	s.applied = index
	s.mu.Unlock()
}

// QueueMaxOffset returns the next queue offset of a queue as this node
// applied it (RocketMQ's max offset: one past the last message), 0 for a
// queue never written. On a follower it may trail the leader.
func (n *Node) QueueMaxOffset(k QueueKey) int64 {
	n.fsm.st.mu.RLock()
	defer n.fsm.st.mu.RUnlock()
	return n.fsm.st.queueNext[k]
}

// Queues returns the next queue offset of every queue ever written.
func (n *Node) Queues() map[QueueKey]int64 { return n.fsm.st.copyQueues() }

// MaxCommitOffset returns the next commit offset: one past the last
// applied message byte.
func (n *Node) MaxCommitOffset() int64 {
	n.fsm.st.mu.RLock()
	defer n.fsm.st.mu.RUnlock()
	return n.fsm.st.commitNext
}

// AppliedIndex returns the raft index of the last entry this node applied
// (a put, a state-machine command, or a rejected stale put).
func (n *Node) AppliedIndex() uint64 {
	n.fsm.st.mu.RLock()
	defer n.fsm.st.mu.RUnlock()
	return n.fsm.st.applied
}

// Compare orders queue keys by topic, then queue id.
func (k QueueKey) Compare(o QueueKey) int {
	if c := cmp.Compare(k.Topic, o.Topic); c != 0 {
		return c
	}
	return cmp.Compare(k.QueueID, o.QueueID)
}
