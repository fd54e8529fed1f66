package store

import (
	"errors"
	"fmt"

	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/message"
)

// GetStatus is how a read of a queue ended, as RocketMQ's
// GetMessageStatus. The broker maps it to a pull's response code.
type GetStatus int

// Read outcomes.
const (
	// Found: Body holds at least one matching record.
	Found GetStatus = iota
	// NoMatchedMessage: entries were read but none matched the filter.
	NoMatchedMessage
	// MessageWasRemoving: the entries' bytes were removed by retention.
	MessageWasRemoving
	// NoMessageInQueue: the queue is unknown or empty.
	NoMessageInQueue
	// OffsetTooSmall: the offset is below the queue's start.
	OffsetTooSmall
	// OffsetOverflowOne: the offset is the queue's end (nothing yet).
	OffsetOverflowOne
	// OffsetOverflowBadly: the offset is past the queue's end.
	OffsetOverflowBadly
	// OffsetFoundNull: nothing could be read at the offset.
	OffsetFoundNull
	// Failed: reading failed; Err says why.
	Failed
)

// Read limits, as RocketMQ's defaults for messages in memory.
const (
	// MaxGetMessages caps the messages of one read
	// (maxTransferCountOnMessageInMemory).
	MaxGetMessages = 32
	// MaxGetBytes caps the bytes of one read beyond its first message
	// (maxTransferBytesOnMessageInMemory).
	MaxGetBytes = 256 << 10
	// MaxGetScan caps the consumequeue entries one read examines (16000
	// bytes of consumequeue in RocketMQ).
	MaxGetScan = 800
)

// Filter says which consumequeue entries a read wants.
type Filter interface {
	// MatchesAll reports whether every entry matches (the read then
	// examines only as many entries as it may answer).
	MatchesAll() bool
	// Matches reports whether an entry with this tag hash matches.
	Matches(tagsCode int64) bool
}

// PropertyFilter is a Filter that also decides on a message's properties
// (an SQL92 subscription): entries its Matches lets through are read and
// kept only if MatchesProperties agrees, as RocketMQ's
// isMatchedByCommitLog.
type PropertyFilter interface {
	Filter
	MatchesProperties(props message.EncodedProperties) bool
}

// GetResult is the outcome of GetMessage.
type GetResult struct {
	Status GetStatus
	// NextBeginOffset is where the next read of the queue should start:
	// past what was read, or corrected into the queue.
	NextBeginOffset int64
	// MinOffset and MaxOffset are the queue's bounds.
	MinOffset, MaxOffset int64
	// Body is the matching stored records, concatenated.
	Body []byte
	// Err explains Failed ("reading consumequeue: ...", "reading
	// commitlog: ..."): the broker's remark.
	Err error
	// Behind is how far the reader is behind the log's end: the bytes
	// from the commit offset of the last consumequeue entry the read
	// examined to MaxCommitOffset, as RocketMQ's maxOffsetPy −
	// maxPhyOffsetPulling (the input of suggestPullingFromSlave). Commit
	// offsets are the same on every replica, so it means the same on
	// each. 0 when the read examined no entry.
	Behind int64
}

// GetMessage reads up to maxMsgs messages of a queue from offset that f
// matches (nil matches all), as RocketMQ's DefaultMessageStore.getMessage
// on a master: NextBeginOffset is corrected into the queue whenever offset
// is outside it.
func (s *Store) GetMessage(topic string, queueID int32, offset int64, maxMsgs int32, f Filter) GetResult {
	q, ok := s.cq.Lookup(topic, queueID)
	if !ok {
		return GetResult{Status: NoMessageInQueue}
	}
	minOff, maxOff := q.MinOffset(), q.MaxOffset()
	res := GetResult{MinOffset: minOff, MaxOffset: maxOff}
	switch {
	case maxOff == 0:
		res.Status = NoMessageInQueue
		return res
	case offset < minOff:
		res.Status, res.NextBeginOffset = OffsetTooSmall, minOff
		return res
	case offset == maxOff:
		res.Status, res.NextBeginOffset = OffsetOverflowOne, offset
		return res
	case offset > maxOff:
		res.Status, res.NextBeginOffset = OffsetOverflowBadly, maxOff
		if minOff == 0 {
			res.NextBeginOffset = minOff
		}
		return res
	}
	limit := scanLimit(maxMsgs, f)
	entries, err := q.Read(offset, limit, nil)
	if err == nil && len(entries) == limit && limit < MaxGetScan {
		st, consumed, body, rerr := s.readRecords(entries, maxMsgs, f)
		if st == Found || rerr != nil {
			return s.readResult(res, st, offset, entries[:consumed], body, rerr)
		}
		// Nothing in the first entries (retention removed their bytes):
		// scan on, as far as any read does.
		entries, err = q.Read(offset, MaxGetScan, entries[:0])
	}
	if errors.Is(err, ErrOffsetOutOfRange) {
		// Retention moved the queue's start since MinOffset was read.
		res.MinOffset = q.MinOffset()
		res.Status, res.NextBeginOffset = OffsetTooSmall, max(res.MinOffset, offset)
		return res
	}
	if err != nil {
		res.Status, res.NextBeginOffset, res.Err = Failed, offset, fmt.Errorf("reading consumequeue: %w", err)
		return res
	}
	if len(entries) == 0 {
		res.Status, res.NextBeginOffset = OffsetFoundNull, offset
		return res
	}
	st, consumed, body, err := s.readRecords(entries, maxMsgs, f)
	return s.readResult(res, st, offset, entries[:consumed], body, err)
}

// readResult completes res from a read that examined the entries consumed.
func (s *Store) readResult(res GetResult, st GetStatus, offset int64, consumed []Entry, body []byte, err error) GetResult {
	res.Status, res.NextBeginOffset, res.Body = st, offset+int64(len(consumed)), body
	if err != nil {
		res.Err = fmt.Errorf("reading commitlog: %w", err)
		return res
	}
	if n := len(consumed); n > 0 {
		res.Behind = max(s.clog.MaxCommitOffset()-consumed[n-1].CommitOffset, 0)
	}
	return res
}

// scanLimit is how many consumequeue entries a read examines: as many as
// it may answer when every message matches, else up to MaxGetScan to find
// matching ones.
func scanLimit(maxMsgs int32, f Filter) int {
	if f == nil || f.MatchesAll() {
		return int(min(max(maxMsgs, 1), MaxGetMessages))
	}
	return MaxGetScan
}

// readRecords copies the records of the matching entries into one body and
// returns how many entries it consumed. Entries whose bytes retention
// removed are skipped, like RocketMQ skipping to the next commitlog file.
func (s *Store) readRecords(entries []Entry, maxMsgs int32, f Filter) (GetStatus, int, []byte, error) {
	if pf, ok := f.(PropertyFilter); ok {
		return s.readFiltered(entries, maxMsgs, pf)
	}
	status := NoMatchedMessage
	var body []byte
	var spans []commitlog.Span
	count := 0
	skipBelow := int64(-1)
	maxMsgs = min(max(maxMsgs, 1), MaxGetMessages)
	i := 0
	for i < len(entries) {
		// Pick the next run of matching entries within the limits, then
		// read them together.
		spans, bytes := spans[:0], len(body)
		j := i
		for ; j < len(entries); j++ {
			e := entries[j]
			if e.CommitOffset < skipBelow || (f != nil && !f.Matches(e.TagsCode)) {
				continue
			}
			if count+len(spans) > 0 && (count+len(spans) >= int(maxMsgs) || bytes+int(e.Size) > MaxGetBytes) {
				break
			}
			spans = append(spans, commitlog.Span{CommitOffset: e.CommitOffset, Size: e.Size})
			bytes += int(e.Size)
		}
		if len(spans) == 0 {
			i = j
			break
		}
		if body == nil {
			body = make([]byte, 0, bytes)
		}
		var n int
		var err error
		body, n, err = s.clog.ReadMessages(body, spans)
		count += n
		if n > 0 {
			status = Found
		}
		if err == nil {
			i = j
			continue
		}
		if !errors.Is(err, ErrRemoved) {
			return Failed, 0, nil, err
		}
		// Retention removed the bytes of spans[n]: skip what lies below
		// the first retained message and go on after it.
		if count == 0 {
			status = MessageWasRemoving
		}
		if skipBelow, err = s.clog.MinCommitOffset(); err != nil {
			return Failed, 0, nil, err
		}
		for i < j && entries[i].CommitOffset <= spans[n].CommitOffset {
			i++
		}
	}
	return status, i, body, nil
}

// readFiltered is readRecords for a PropertyFilter: every entry that
// passes the tag check is read into a scratch buffer and its properties
// evaluated; the matching records are copied into the body. It stops at
// maxMsgs matches or MaxGetBytes, like readRecords.
func (s *Store) readFiltered(entries []Entry, maxMsgs int32, f PropertyFilter) (GetStatus, int, []byte, error) {
	status := NoMatchedMessage
	var body, scratch []byte
	count, removed := 0, false
	maxMsgs = min(max(maxMsgs, 1), MaxGetMessages)
	i := 0
	for ; i < len(entries); i++ {
		e := entries[i]
		if !f.Matches(e.TagsCode) {
			continue
		}
		if count > 0 && (count >= int(maxMsgs) || len(body)+int(e.Size) > MaxGetBytes) {
			break
		}
		rec, err := s.clog.ReadMessage(scratch[:0], e.CommitOffset, int(e.Size))
		if errors.Is(err, ErrRemoved) {
			removed = true
			continue
		}
		if err != nil {
			return Failed, 0, nil, err
		}
		scratch = rec
		props, err := message.RecordProperties(rec)
		if err != nil {
			return Failed, 0, nil, fmt.Errorf("record at commit offset %d: %w", e.CommitOffset, err)
		}
		if !f.MatchesProperties(props) {
			continue
		}
		body = append(body, rec...)
		count++
		status = Found
	}
	if count == 0 && removed {
		status = MessageWasRemoving
	}
	return status, i, body, nil
}
