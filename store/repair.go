package store

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/dledger"
)

// The consumequeues and the key index are derived from the commitlog, so
// damage to them (a torn page, a flipped bit, anywhere in any file) is
// repaired rather than fatal. Open holds every consumequeue entry against
// the put entry of the commitlog that dispatched it (verifyQueues); a
// queue is cut at its first entry that does not match, and refilled from
// the commitlog at the first Dispatch after Open (repairQueues), from the
// committed entries before the one being applied — raft replays only what
// follows its last snapshot, so the rest must come from the log itself.

// logEntries decodes put entries of the commitlog, keeping the last one:
// a queue's consecutive messages are mostly in the same or the next entry.
type logEntries struct {
	clog  *commitlog.Log
	index uint64
	msgs  []dledger.AppliedMessage
}

// at returns the messages of the put entry at raft index i.
func (c *logEntries) at(i uint64) ([]dledger.AppliedMessage, error) {
	if c.index == i && i != 0 {
		return c.msgs, nil
	}
	var l raft.Log
	if err := c.clog.GetLog(i, &l); err != nil {
		return nil, err
	}
	msgs, err := dledger.PutMessages(&l)
	if err != nil {
		return nil, err
	}
	c.index, c.msgs = i, msgs
	return msgs, nil
}

// verifyQueues holds every queue against the put entries of the
// commitlog, in one pass over the log: an entry that differs from the
// message the log holds at its queue offset, a message the log holds
// below the queue's start (a torn head) and entries past the last message
// the log holds for the queue (a torn tail that read as valid) all cut the
// queue there; cut queues are marked for refilling. Messages already
// removed by retention are not checked (CorrectMinOffsets skips them).
func (s *Store) verifyQueues() error {
	first, err1 := s.clog.FirstIndex()
	last, err2 := s.clog.LastIndex()
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	v := &queueCheck{s: s, cut: map[dledger.QueueKey]int64{}, head: map[dledger.QueueKey]bool{}, seen: map[dledger.QueueKey]int64{}}
	log := &logEntries{clog: s.clog}
	for i := first; i != 0 && i <= last; i++ {
		msgs, err := log.at(i)
		if err != nil {
			return fmt.Errorf("store: verify consumequeues against entry %d: %w", i, err)
		}
		for k := range msgs {
			if err := v.message(&msgs[k]); err != nil {
				return err
			}
		}
	}
	if err := v.apply(); err != nil {
		return err
	}
	return s.reindexLog(first, last)
}

// verifyIndex checks the key index; a damaged one is reset, and rebuilt
// by reindexLog and the refills.
func (s *Store) verifyIndex() error {
	err := s.index.Verify(s.clog.MaxCommitOffset())
	if err == nil {
		return nil
	}
	s.log.Warn("key index damaged (torn page or flipped bit): rebuilding it from the commitlog", "error", err)
	s.reindex = true
	return s.index.Reset()
}

// reindexLog puts again the keys of every message of log entries first..
// last that its consumequeue holds (those are applied: the index never
// names a message that is not), after verifyIndex reset the index.
func (s *Store) reindexLog(first, last uint64) error {
	if !s.reindex {
		return nil
	}
	log := &logEntries{clog: s.clog}
	n := 0
	for i := first; i != 0 && i <= last; i++ {
		msgs, err := log.at(i)
		if err != nil {
			return fmt.Errorf("store: reindex entry %d: %w", i, err)
		}
		for k := range msgs {
			m := &msgs[k]
			if q, ok := s.cq.Lookup(m.Topic, m.QueueID); ok && m.QueueOffset >= q.MinOffset() && m.QueueOffset < q.MaxOffset() {
				n += s.putKeys(i, m)
			}
		}
	}
	if len(s.refill) == 0 {
		s.reindex = false
	}
	s.log.Warn("rebuilt the key index from the commitlog", "keys", n)
	return s.index.Flush()
}

// putKeys indexes m's keys as Dispatch does; failures are only logged.
func (s *Store) putKeys(index uint64, m *dledger.AppliedMessage) int {
	for _, key := range m.Keys {
		if err := s.index.Put(key, m.CommitOffset, m.StoreTimestamp); err != nil {
			s.log.Warn("index put failed", "entry", index, "key", key, "commit_offset", m.CommitOffset, "error", err)
		}
	}
	return len(m.Keys)
}

// queueCheck is the state of verifyQueues's pass.
type queueCheck struct {
	s    *Store
	cut  map[dledger.QueueKey]int64 // first bad queue offset
	head map[dledger.QueueKey]bool  // the cut is a torn head: restart there
	seen map[dledger.QueueKey]int64 // last queue offset the log holds
}

func (v *queueCheck) message(m *dledger.AppliedMessage) error {
	k := dledger.QueueKey{Topic: m.Topic, QueueID: m.QueueID}
	v.seen[k] = m.QueueOffset
	q, ok := v.s.cq.Lookup(k.Topic, k.QueueID)
	if _, done := v.cut[k]; done || !ok {
		return nil
	}
	off := m.QueueOffset
	switch {
	case off < q.MinOffset():
		v.cut[k], v.head[k] = off, true
	case off < q.MaxOffset():
		e, err := q.Get(off)
		if err != nil {
			return fmt.Errorf("store: verify consumequeue %s/%d: %w", k.Topic, k.QueueID, err)
		}
		if e != (Entry{CommitOffset: m.CommitOffset, Size: m.Size, TagsCode: m.TagsCode}) {
			v.cut[k] = off
		}
	}
	return nil
}

// apply cuts the queues found bad and marks them for refilling.
func (v *queueCheck) apply() error {
	for k, last := range v.seen {
		q, ok := v.s.cq.Lookup(k.Topic, k.QueueID)
		if _, done := v.cut[k]; done || !ok {
			continue
		}
		switch {
		case q.MaxOffset() > last+1:
			v.cut[k] = last + 1
		case q.MaxOffset() < last+1:
			// Behind the log (recovery cut a torn tail, or it was not
			// flushed): raft replays only what follows its snapshot, so
			// the committed part before that is refilled from the log.
			v.mark(k)
		}
	}
	for k, off := range v.cut {
		q, _ := v.s.cq.Lookup(k.Topic, k.QueueID)
		v.s.log.Warn("consumequeue does not match the commitlog (torn page or flipped bit): cutting the queue; it is rebuilt from the commitlog",
			"topic", k.Topic, "queue", k.QueueID, "offset", off, "min", q.MinOffset(), "max", q.MaxOffset(), "torn_head", v.head[k])
		var err error
		if v.head[k] {
			if q.MinOffset() < q.MaxOffset() {
				err = q.Truncate(q.MinOffset())
			}
			if err == nil {
				err = q.SetMinOffset(off)
			}
		} else if off < q.MaxOffset() {
			err = q.Truncate(off)
		}
		if err != nil {
			return fmt.Errorf("store: cut consumequeue %s/%d: %w", k.Topic, k.QueueID, err)
		}
		v.mark(k)
	}
	return nil
}

// mark makes k a queue to refill from the log.
func (v *queueCheck) mark(k dledger.QueueKey) {
	if v.s.refill == nil {
		v.s.refill = map[dledger.QueueKey]bool{}
	}
	v.s.refill[k] = true
}

// repairQueues refills the queues verifyQueues cut from the committed
// entries before index, the entry Dispatch is applying (all before it are
// committed); the replay from index on does the rest. It runs once, on
// the FSM goroutine.
func (s *Store) repairQueues(index uint64) error {
	if len(s.refill) == 0 {
		return nil
	}
	n, err := s.refillWalk(index, func(dledger.QueueKey, int64) bool { return true })
	if err != nil {
		return err
	}
	s.log.Warn("rebuilt damaged consumequeues from the commitlog", "queues", len(s.refill), "entries", n, "through_entry", index-1)
	s.refill, s.reindex = nil, false
	if err := s.index.Flush(); err != nil {
		return err
	}
	return s.cq.Flush()
}

// refillBefore refills the cut queues up to the queue offsets of a
// snapshot being restored (Restored's next): those messages are committed,
// and a queue left behind the snapshot would be reset, its messages
// unreachable. On the FSM goroutine.
func (s *Store) refillBefore(next map[dledger.QueueKey]int64) error {
	if len(s.refill) == 0 {
		return nil
	}
	last, err := s.clog.LastIndex()
	if err != nil {
		return err
	}
	n, err := s.refillWalk(last+1, func(k dledger.QueueKey, off int64) bool { return off < next[k] })
	if err == nil {
		s.log.Warn("rebuilt damaged consumequeues from the commitlog up to the restored snapshot", "queues", len(s.refill), "entries", n)
	}
	return err
}

// refillWalk appends to the cut queues the messages of the log's put
// entries before index that want accepts and that continue their queue.
func (s *Store) refillWalk(index uint64, want func(dledger.QueueKey, int64) bool) (int, error) {
	from, err := s.refillStart()
	if err != nil {
		return 0, err
	}
	log := &logEntries{clog: s.clog}
	n := 0
	for i := from; i != 0 && i < index; i++ {
		msgs, err := log.at(i)
		if errors.Is(err, raft.ErrLogNotFound) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("store: refill consumequeues from entry %d: %w", i, err)
		}
		for j := range msgs {
			m := &msgs[j]
			k := dledger.QueueKey{Topic: m.Topic, QueueID: m.QueueID}
			if !s.refill[k] || !want(k, m.QueueOffset) {
				continue
			}
			q, _ := s.cq.Lookup(k.Topic, k.QueueID)
			if m.QueueOffset != q.MaxOffset() {
				continue // held already, or before what the log still has
			}
			if err := q.Append(m.QueueOffset, Entry{CommitOffset: m.CommitOffset, Size: m.Size, TagsCode: m.TagsCode}); err != nil {
				return n, fmt.Errorf("store: refill consumequeue %s/%d: %w", k.Topic, k.QueueID, err)
			}
			if s.reindex {
				s.putKeys(i, &msgs[j])
			}
			n++
		}
	}
	return n, nil
}

// refillStart is the raft index of the entry holding the last message the
// cut queues kept (the log's first index if one kept none).
func (s *Store) refillStart() (uint64, error) {
	first, err := s.clog.FirstIndex()
	if err != nil {
		return 0, err
	}
	from := uint64(0)
	for k := range s.refill {
		q, _ := s.cq.Lookup(k.Topic, k.QueueID)
		i := first
		if co := q.LastCommitOffset(); co >= 0 {
			if j, err := s.clog.EntryForCommitOffset(co); err == nil {
				i = j
			}
		}
		if from == 0 || i < from {
			from = i
		}
	}
	return from, nil
}
