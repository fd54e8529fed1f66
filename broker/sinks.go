package broker

import (
	"fmt"
	"sync"

	"github.com/raftmq/raftmq/consumequeue"
	"github.com/raftmq/raftmq/dledger"
)

// sinks receives what the FSM applies — consumequeue entries and index
// keys — on every node, and wakes pulls held for the queues that grew.
type sinks struct {
	b       *Broker
	arrival *notifier
}

var (
	_ dledger.QueueSink = (*sinks)(nil)
	_ dledger.IndexSink = (*sinks)(nil)
)

func newSinks(b *Broker) *sinks { return &sinks{b: b, arrival: newNotifier()} }

// Append implements dledger.QueueSink.
func (s *sinks) Append(k dledger.QueueKey, queueOffset int64, e dledger.QueueEntry) error {
	q, err := s.b.cq.Queue(k.Topic, k.QueueID)
	if err != nil {
		return err
	}
	if err := q.Append(queueOffset, consumequeue.Entry{CommitOffset: e.CommitOffset, Size: e.Size, TagsCode: e.TagsCode}); err != nil {
		return err
	}
	s.arrival.notify(k)
	return nil
}

// Restored implements dledger.QueueSink. After a restart the consumequeue
// holds at least what the snapshot covers (it is flushed before each
// snapshot), and raft replays the rest. After a snapshot installed from the
// leader the commitlog was emptied, so a queue behind the snapshot cannot
// be filled in: the whole consumequeue restarts at the snapshot's offsets.
func (s *sinks) Restored(next map[dledger.QueueKey]int64) error {
	behind := false
	for k, off := range next {
		q, ok := s.b.cq.Lookup(k.Topic, k.QueueID)
		if !ok || q.MaxOffset() < off {
			behind = true
			break
		}
	}
	if !behind {
		return nil
	}
	s.b.log.Warn("consumequeue behind the installed snapshot; restarting it at the snapshot's offsets", "queues", len(next))
	if err := s.b.cq.Reset(); err != nil {
		return err
	}
	for k, off := range next {
		q, err := s.b.cq.Queue(k.Topic, k.QueueID)
		if err != nil {
			return err
		}
		if off > 0 {
			if err := q.SetMinOffset(off); err != nil {
				return fmt.Errorf("broker: restore %s/%d at %d: %w", k.Topic, k.QueueID, off, err)
			}
		}
	}
	return nil
}

// Put implements dledger.IndexSink.
func (s *sinks) Put(key string, commitOffset, storeTimestamp int64) error {
	return s.b.index.Put(key, commitOffset, storeTimestamp)
}

// notifier wakes waiters of a queue when it grows: wait returns a channel
// that the next notify of that queue closes.
type notifier struct {
	mu sync.Mutex
	ch map[dledger.QueueKey]chan struct{}
}

func newNotifier() *notifier { return &notifier{ch: map[dledger.QueueKey]chan struct{}{}} }

func (n *notifier) wait(k dledger.QueueKey) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.ch[k]
	if !ok {
		c = make(chan struct{})
		n.ch[k] = c
	}
	return c
}

func (n *notifier) notify(k dledger.QueueKey) {
	n.mu.Lock()
	c, ok := n.ch[k]
	delete(n.ch, k)
	n.mu.Unlock()
	if ok {
		close(c)
	}
}
