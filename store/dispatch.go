package store

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/raftmq/raftmq/dledger"
)

// Dispatch implements dledger.Dispatcher: the messages of one committed
// put entry go to their consumequeues (one write per queue) and their keys
// to the index, and pulls held for the queues that grew wake. A
// consumequeue entry that differs from the replayed one is stale or torn
// and is rewritten (consumequeue.Queue.Append); a write that meets a full
// disk waits for space (space.go); a gap or another I/O failure stops the
// node. Index failures are only logged: the index is
// rebuildable and RocketMQ treats it as best effort.
func (s *Store) Dispatch(index uint64, msgs []dledger.AppliedMessage) error {
	if err := s.repairQueues(index); err != nil {
		return err
	}
	for _, r := range s.runs.group(msgs) {
		what := func() string {
			return fmt.Sprintf("consumequeue %s/%d@%d+%d", r.key.Topic, r.key.QueueID, r.first, len(r.entries))
		}
		err := s.whenSpace(what, func() error {
			q, err := s.cq.Queue(r.key.Topic, r.key.QueueID)
			if err == nil {
				err = q.AppendBatch(r.first, r.entries)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", what(), err)
		}
		s.arrival.notify(r.key)
	}
	for i := range msgs {
		m := &msgs[i]
		for _, key := range m.Keys {
			if err := s.index.Put(key, m.CommitOffset, m.StoreTimestamp); err != nil {
				s.log.Warn("index put failed", "entry", index, "key", key, "commit_offset", m.CommitOffset, "error", err)
			}
		}
	}
	return nil
}

// Restored implements dledger.Dispatcher. A queue that is behind the
// snapshot is not filled in place: its topic's queues are dropped and
// restarted where the history imported with the snapshot begins (from),
// or at the snapshot's offsets when the log holds none of the queue's
// messages; queues at or ahead of it are kept for idempotent replay.
// Entries of kept queues whose messages are no longer in the commitlog
// are trimmed by CorrectMinOffsets, as after retention.
func (s *Store) Restored(next, from map[dledger.QueueKey]int64) error {
	if err := s.refillBefore(next); err != nil { // queues Open found damaged (repair.go)
		return err
	}
	behind := map[string]bool{}
	for k, n := range next {
		if q, ok := s.cq.Lookup(k.Topic, k.QueueID); !ok || q.MaxOffset() < n {
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
		if err := s.cq.DeleteTopic(t); err != nil {
			errs = append(errs, fmt.Errorf("store: reset consumequeue topic %s: %w", t, err))
		}
	}
	for k, n := range next {
		if !behind[k.Topic] {
			continue
		}
		if f, ok := from[k]; ok && f < n {
			n = f
		}
		q, err := s.cq.Queue(k.Topic, k.QueueID)
		if err == nil {
			err = q.SetMinOffset(n)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("store: restart consumequeue %s/%d at %d: %w", k.Topic, k.QueueID, n, err))
		}
	}
	return errors.Join(errs...)
}

// Sync implements dledger.Syncer: the consumequeues and the index are made
// durable before each raft snapshot.
func (s *Store) Sync() error {
	if err := s.cq.Flush(); err != nil {
		return err
	}
	return s.index.Flush()
}

// WaitArrival returns a channel closed when queue k next grows. Take it
// before reading the queue, so a message dispatched between the read and
// the wait still wakes the waiter.
func (s *Store) WaitArrival(k dledger.QueueKey) <-chan struct{} { return s.arrival.wait(k) }

// notifier wakes waiters of a queue when it grows: wait returns a channel
// that the next notify of that queue closes.
type notifier struct {
	mu sync.Mutex
	ch map[dledger.QueueKey]chan struct{}
}

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

// queueRun is the consumequeue entries of one queue within one put entry:
// consecutive queue offsets from first.
type queueRun struct {
	key     dledger.QueueKey
	first   int64
	entries []Entry
}

// queueRuns groups a put entry's messages by queue, in order of first
// appearance, reusing its memory from one entry to the next (it belongs
// to the FSM goroutine). The checked offsets of one queue within an entry
// are consecutive, so each group is one run.
type queueRuns struct {
	runs   []queueRun
	at     map[dledger.QueueKey]int
	counts []int
	buf    []Entry
}

func (g *queueRuns) group(msgs []dledger.AppliedMessage) []queueRun {
	if g.at == nil {
		g.at = map[dledger.QueueKey]int{}
	}
	clear(g.at)
	g.runs, g.counts = g.runs[:0], g.counts[:0]
	for i := range msgs {
		k := dledger.QueueKey{Topic: msgs[i].Topic, QueueID: msgs[i].QueueID}
		j, ok := g.at[k]
		if !ok {
			j = len(g.runs)
			g.at[k] = j
			g.runs = append(g.runs, queueRun{key: k, first: msgs[i].QueueOffset})
			g.counts = append(g.counts, 0)
		}
		g.counts[j]++
	}
	if cap(g.buf) < len(msgs) {
		g.buf = make([]Entry, len(msgs))
	}
	buf := g.buf[:len(msgs)]
	for j := range g.runs {
		n := g.counts[j]
		g.runs[j].entries, buf = buf[:0:n], buf[n:]
	}
	for i := range msgs {
		m := &msgs[i]
		r := &g.runs[g.at[dledger.QueueKey{Topic: m.Topic, QueueID: m.QueueID}]]
		r.entries = append(r.entries, Entry{CommitOffset: m.CommitOffset, Size: m.Size, TagsCode: m.TagsCode})
	}
	if cap(g.buf) > maxRetainedRun {
		g.buf = nil
	}
	return g.runs
}

// maxRetainedRun bounds the entry buffer kept between applies.
const maxRetainedRun = 1 << 16
