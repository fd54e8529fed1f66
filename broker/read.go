package broker

import (
	"errors"

	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/consumequeue"
	"github.com/raftmq/raftmq/remoting"
)

// readStatus is how a read ended, as RocketMQ's GetMessageStatus.
type readStatus int

const (
	readFound readStatus = iota
	readNoMatch
	readRemoving
	readNoMessageInQueue
	readOffsetTooSmall
	readOverflowOne
	readOverflowBadly
	readFoundNull
	readFailed
)

// readQueue reads up to maxMsgs matching messages of a queue from offset,
// as DefaultMessageStore.getMessage on a master: nextBeginOffset is
// corrected into the queue whenever offset is outside it.
func (b *Broker) readQueue(topic string, queueID int32, offset int64, maxMsgs int32, sub *subscription) pullResult {
	q, ok := b.cq.Lookup(topic, queueID)
	if !ok {
		return pullResultOf(readNoMessageInQueue, offset, 0, 0, 0, nil)
	}
	minOff, maxOff := q.MinOffset(), q.MaxOffset()
	switch {
	case maxOff == 0:
		return pullResultOf(readNoMessageInQueue, offset, 0, minOff, maxOff, nil)
	case offset < minOff:
		return pullResultOf(readOffsetTooSmall, offset, minOff, minOff, maxOff, nil)
	case offset == maxOff:
		return pullResultOf(readOverflowOne, offset, offset, minOff, maxOff, nil)
	case offset > maxOff:
		next := maxOff
		if minOff == 0 {
			next = minOff
		}
		return pullResultOf(readOverflowBadly, offset, next, minOff, maxOff, nil)
	}
	limit := scanLimit(maxMsgs, sub)
	entries, err := q.Read(offset, limit, nil)
	if err == nil && len(entries) == limit && limit < maxPullScan {
		st, consumed, body, rerr := b.readRecords(entries, maxMsgs, sub)
		if st == readFound || rerr != nil {
			return readResult(st, offset, consumed, minOff, maxOff, body, rerr)
		}
		// Nothing in the first entries (retention removed their bytes):
		// scan on, as far as any pull does.
		entries, err = q.Read(offset, maxPullScan, entries[:0])
	}
	if errors.Is(err, consumequeue.ErrOffsetOutOfRange) {
		// Retention moved the queue's start since MinOffset was read.
		minOff = q.MinOffset()
		return pullResultOf(readOffsetTooSmall, offset, max(minOff, offset), minOff, maxOff, nil)
	}
	if err != nil {
		r := pullResultOf(readFailed, offset, offset, minOff, maxOff, nil)
		r.remark = "reading consumequeue: " + err.Error()
		return r
	}
	if len(entries) == 0 {
		return pullResultOf(readFoundNull, offset, offset, minOff, maxOff, nil)
	}
	st, consumed, body, err := b.readRecords(entries, maxMsgs, sub)
	return readResult(st, offset, consumed, minOff, maxOff, body, err)
}

// readResult is the pull answer of a readRecords outcome.
func readResult(st readStatus, offset int64, consumed int, minOff, maxOff int64, body []byte, err error) pullResult {
	r := pullResultOf(st, offset, offset+int64(consumed), minOff, maxOff, body)
	if err != nil {
		r.remark = "reading commitlog: " + err.Error()
	}
	return r
}

// scanLimit is how many consumequeue entries a pull examines: as many as
// it may answer when every message matches, else up to maxPullScan to
// find matching ones.
func scanLimit(maxMsgs int32, sub *subscription) int {
	if sub == nil || sub.all || sub.ClassFilter {
		return int(min(max(maxMsgs, 1), maxPullMessages))
	}
	return maxPullScan
}

// readRecords copies the records of the matching entries into one body and
// returns how many entries it consumed. Entries whose bytes retention
// removed are skipped, like RocketMQ skipping to the next commitlog file.
func (b *Broker) readRecords(entries []consumequeue.Entry, maxMsgs int32, sub *subscription) (readStatus, int, []byte, error) {
	status := readNoMatch
	var body []byte
	var spans []commitlog.Span
	count := 0
	skipBelow := int64(-1)
	maxMsgs = min(max(maxMsgs, 1), maxPullMessages)
	i := 0
	for i < len(entries) {
		// Pick the next run of matching entries within the limits, then
		// read them together.
		spans, bytes := spans[:0], len(body)
		j := i
		for ; j < len(entries); j++ {
			e := entries[j]
			if e.CommitOffset < skipBelow || !sub.matches(e.TagsCode) {
				continue
			}
			if count+len(spans) > 0 && (count+len(spans) >= int(maxMsgs) || bytes+int(e.Size) > maxPullBytes) {
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
		body, n, err = b.clog.ReadMessages(body, spans)
		count += n
		if n > 0 {
			status = readFound
		}
		if err == nil {
			i = j
			continue
		}
		if !errors.Is(err, commitlog.ErrOffsetNotFound) {
			return readFailed, 0, nil, err
		}
		// Retention removed the bytes of spans[n]: skip what lies below
		// the first retained message and go on after it.
		if count == 0 {
			status = readRemoving
		}
		if skipBelow, err = b.clog.MinCommitOffset(); err != nil {
			return readFailed, 0, nil, err
		}
		for i < j && entries[i].CommitOffset <= spans[n].CommitOffset {
			i++
		}
	}
	return status, i, body, nil
}

// pullResultOf maps a read status to its pull answer, as
// PullMessageProcessor: offset 0 of an empty queue is "not found yet",
// any other offset of it "moved".
func pullResultOf(st readStatus, offset, next, minOff, maxOff int64, body []byte) pullResult {
	r := pullResult{next: next, min: minOff, max: maxOff}
	switch st {
	case readFound:
		r.code, r.body = remoting.ResSuccess, body
	case readNoMatch, readRemoving:
		r.code = remoting.ResPullRetryImmediately
	case readNoMessageInQueue:
		r.code = remoting.ResPullNotFound
		if offset != 0 {
			r.code = remoting.ResPullOffsetMoved
		}
	case readOffsetTooSmall, readOverflowBadly:
		r.code = remoting.ResPullOffsetMoved
	case readOverflowOne, readFoundNull:
		r.code = remoting.ResPullNotFound
	default:
		r.code = remoting.ResSystemError
	}
	return r
}
