package store

import (
	"encoding/binary"
	"fmt"

	"github.com/raftmq/raftmq/message"
)

// Point reads: queue bounds, searches and single records, for the
// broker's offset, scheduler and admin requests. Any replica answers them
// from what it has applied (commit offsets are the same everywhere).

// storeTimePrefix is enough of a record to hold STORETIMESTAMP with
// IPv6 hosts.
const storeTimePrefix = 128

// maxRecordSize bounds a record ReadRecord reads whole.
const maxRecordSize = 64 << 20

// MinOffset returns a queue's first offset, 0 for an unknown queue.
func (s *Store) MinOffset(topic string, queueID int32) int64 {
	if q, ok := s.cq.Lookup(topic, queueID); ok {
		return q.MinOffset()
	}
	return 0
}

// MaxOffset returns one past a queue's last offset, 0 for an unknown queue.
func (s *Store) MaxOffset(topic string, queueID int32) int64 {
	if q, ok := s.cq.Lookup(topic, queueID); ok {
		return q.MaxOffset()
	}
	return 0
}

// ReadEntries reads up to n consumequeue entries of a queue from offset
// into dst (reused). An unknown queue reads nothing; an offset outside the
// queue is ErrOffsetOutOfRange. minOffset is the queue's start.
func (s *Store) ReadEntries(topic string, queueID int32, offset int64, n int, dst []Entry) (entries []Entry, minOffset int64, err error) {
	q, ok := s.cq.Lookup(topic, queueID)
	if !ok {
		return dst[:0], 0, nil
	}
	minOffset = q.MinOffset()
	if offset < minOffset {
		return dst[:0], minOffset, ErrOffsetOutOfRange
	}
	entries, err = q.Read(offset, n, dst[:0])
	return entries, minOffset, err
}

// SearchOffsetByTimestamp returns the first offset of a queue stored at
// or after ts (the max offset when all are older), 0 for an unknown queue.
func (s *Store) SearchOffsetByTimestamp(topic string, queueID int32, ts int64) (int64, error) {
	q, ok := s.cq.Lookup(topic, queueID)
	if !ok {
		return 0, nil
	}
	return q.SearchByTimestamp(ts, s.storeTime)
}

// EarliestMessageTime returns the store time of a queue's first message,
// -1 when there is none.
func (s *Store) EarliestMessageTime(topic string, queueID int32) int64 {
	q, ok := s.cq.Lookup(topic, queueID)
	if !ok {
		return -1
	}
	e, err := q.Get(q.MinOffset())
	if err != nil {
		return -1
	}
	ts, err := s.storeTime(e)
	if err != nil {
		return -1
	}
	return ts
}

// FirstMessageStored reports whether a queue starts at offset 0 and its
// first message (if any) is still in the commitlog: RocketMQ's "still in
// memory" rule for a group with no committed offset.
func (s *Store) FirstMessageStored(topic string, queueID int32) bool {
	q, ok := s.cq.Lookup(topic, queueID)
	if !ok {
		return true
	}
	if q.MinOffset() > 0 {
		return false
	}
	e, err := q.Get(0)
	if err != nil {
		return q.MaxOffset() == 0
	}
	_, err = s.clog.ReadMessage(nil, e.CommitOffset, int(min(e.Size, storeTimePrefix)))
	return err == nil
}

// storeTime reads a message's store timestamp from its record.
func (s *Store) storeTime(e Entry) (int64, error) {
	var buf [storeTimePrefix]byte
	rec, err := s.clog.ReadMessage(buf[:0], e.CommitOffset, int(min(e.Size, storeTimePrefix)))
	if err != nil {
		return 0, err
	}
	return message.RecordStoreTimestamp(rec)
}

// ReadMessage reads size bytes of the record at commit offset co (a
// consumequeue entry's span); ErrRemoved when they are gone.
func (s *Store) ReadMessage(co int64, size int) ([]byte, error) {
	return s.clog.ReadMessage(nil, co, size)
}

// ReadRecord reads the whole stored record that starts at commit offset
// co, which the caller does not know the size of (an offsetMsgId, a
// send-back): its size first, then the record, which must say it is at co.
func (s *Store) ReadRecord(co int64) ([]byte, error) {
	head, err := s.clog.ReadMessage(nil, co, 4)
	if err != nil {
		return nil, err
	}
	size, err := message.PeekTotalSize(head)
	if err != nil {
		return nil, err
	}
	if size < message.MinExtSize || size > maxRecordSize {
		return nil, fmt.Errorf("store: no record at commit offset %d (size field %d)", co, size)
	}
	rec, err := s.clog.ReadMessage(nil, co, size)
	if err != nil {
		return nil, err
	}
	if len(rec) != size || binary.BigEndian.Uint32(rec[4:]) != message.MagicCode {
		return nil, fmt.Errorf("store: no record starts at commit offset %d (bad magic)", co)
	}
	if at, err := message.RecordCommitLogOffset(rec); err != nil || at != co {
		return nil, fmt.Errorf("store: no record starts at commit offset %d", co)
	}
	return rec, nil
}

// QueryIndex returns up to max commit offsets of messages indexed under
// key (IndexKey) stored within [begin, end] (Unix ms), newest first.
// Hash slots collide: the caller checks each record.
func (s *Store) QueryIndex(key string, begin, end int64, max int) ([]int64, error) {
	return s.index.Query(key, begin, end, max)
}

// MinCommitOffset returns the commit offset of the oldest message the
// commitlog still holds.
func (s *Store) MinCommitOffset() (int64, error) { return s.clog.MinCommitOffset() }

// MaxCommitOffset returns one past the last message byte in the commitlog.
func (s *Store) MaxCommitOffset() int64 { return s.clog.MaxCommitOffset() }

// StoreTimeAt returns the store time of the message at a queue offset, -1
// when the queue has no message there (any more).
func (s *Store) StoreTimeAt(topic string, queueID int32, offset int64) int64 {
	q, ok := s.cq.Lookup(topic, queueID)
	if !ok || offset < q.MinOffset() || offset >= q.MaxOffset() {
		return -1
	}
	e, err := q.Get(offset)
	if err != nil {
		return -1
	}
	ts, err := s.storeTime(e)
	if err != nil {
		return -1
	}
	return ts
}
