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
	entries, err := q.Read(offset, maxPullScan, nil)
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
	r := pullResultOf(st, offset, offset+int64(consumed), minOff, maxOff, body)
	if err != nil {
		r.remark = "reading commitlog: " + err.Error()
	}
	return r
}

// readRecords copies the records of the matching entries into one body and
// returns how many entries it consumed. Entries whose bytes retention
// removed are skipped, like RocketMQ skipping to the next commitlog file.
func (b *Broker) readRecords(entries []consumequeue.Entry, maxMsgs int32, sub *subscription) (readStatus, int, []byte, error) {
	status := readNoMatch
	var body []byte
	count := 0
	skipBelow := int64(-1)
	maxMsgs = min(max(maxMsgs, 1), maxPullMessages)
	i := 0
	for ; i < len(entries); i++ {
		e := entries[i]
		if e.CommitOffset < skipBelow {
			continue
		}
		if count > 0 && (count >= int(maxMsgs) || len(body)+int(e.Size) > maxPullBytes) {
			break
		}
		if !sub.matches(e.TagsCode) {
			continue
		}
		var err error
		n := len(body)
		body, err = b.clog.ReadMessage(body, e.CommitOffset, int(e.Size))
		if errors.Is(err, commitlog.ErrOffsetNotFound) {
			body = body[:n]
			if count == 0 {
				status = readRemoving
			}
			if skipBelow, err = b.clog.MinCommitOffset(); err != nil {
				return readFailed, 0, nil, err
			}
			continue
		}
		if err != nil {
			return readFailed, 0, nil, err
		}
		count++
		status = readFound
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
