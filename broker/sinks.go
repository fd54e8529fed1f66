package broker

import (
	"sync"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/indexfile"
)

// sinks receives what the FSM applies — consumequeue entries and index
// keys — on every node, through dledger's consumequeue adapter, and wakes
// pulls held for the queues that grew.
type sinks struct {
	dledger.ConsumeQueueSink
	index   *indexfile.Store
	arrival *notifier
}

var (
	_ dledger.QueueSink = (*sinks)(nil)
	_ dledger.IndexSink = (*sinks)(nil)
)

func newSinks(b *Broker) *sinks {
	return &sinks{ConsumeQueueSink: dledger.ConsumeQueueSink{Store: b.cq}, index: b.index, arrival: newNotifier()}
}

// Append implements dledger.QueueSink.
func (s *sinks) Append(k dledger.QueueKey, first int64, es []dledger.QueueEntry) error {
	if err := s.ConsumeQueueSink.Append(k, first, es); err != nil {
		return err
	}
	s.arrival.notify(k)
	return nil
}

// Put implements dledger.IndexSink.
func (s *sinks) Put(key string, commitOffset, storeTimestamp int64) error {
	return s.index.Put(key, commitOffset, storeTimestamp)
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

// Sync implements dledger.Syncer: the consumequeue and the index are made
// durable before each raft snapshot.
func (s *sinks) Sync() error {
	if err := s.Store.Flush(); err != nil {
		return err
	}
	return s.index.Flush()
}

var _ dledger.Syncer = (*sinks)(nil)
