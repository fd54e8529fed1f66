package client

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// processQueue caches the messages pulled from one queue until they are
// acknowledged (RocketMQ's ProcessQueue, concurrent mode). The offset it
// lets a group commit is the smallest unacknowledged offset, or, with
// nothing cached, the next offset to pull: a message that is slow or being
// retried holds the committed offset back, however far later messages got
// (at-least-once: a restart redelivers everything from it).
type processQueue struct {
	mu      sync.Mutex
	msgs    map[int64]*message.MessageExt
	bytes   int64
	next    int64 // offset after the last pulled (or filtered) message
	dropped bool
	changed chan struct{} // signalled when messages leave or the queue is dropped
	// lastPull and lastConsume are the Unix ms of the last pull answer
	// and the last acknowledgement (running info).
	lastPull, lastConsume int64
}

func newProcessQueue(next int64) *processQueue {
	return &processQueue{msgs: map[int64]*message.MessageExt{}, next: next, changed: make(chan struct{}, 1)}
}

// add caches msgs and records next, the offset the next pull starts at.
func (pq *processQueue) add(msgs []*message.MessageExt, next int64) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	for _, m := range msgs {
		if _, ok := pq.msgs[m.QueueOffset]; !ok {
			pq.msgs[m.QueueOffset] = m
			pq.bytes += int64(len(m.Body))
		}
	}
	if next > pq.next {
		pq.next = next
	}
	pq.lastPull = time.Now().UnixMilli()
}

// setNext moves the next offset, also backwards (a seek or an offset
// moved answer).
func (pq *processQueue) setNext(next int64) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.next = next
}

// remove acknowledges msgs and returns the offset that may be committed.
func (pq *processQueue) remove(msgs []*message.MessageExt) int64 {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	for _, m := range msgs {
		if c, ok := pq.msgs[m.QueueOffset]; ok {
			delete(pq.msgs, m.QueueOffset)
			pq.bytes -= int64(len(c.Body))
		}
	}
	pq.lastConsume = time.Now().UnixMilli()
	pq.signal()
	return pq.commitOffsetLocked()
}

func (pq *processQueue) signal() {
	select {
	case pq.changed <- struct{}{}:
	default:
	}
}

// commitOffset is the smallest unacknowledged offset, or next.
func (pq *processQueue) commitOffset() int64 {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.commitOffsetLocked()
}

func (pq *processQueue) commitOffsetLocked() int64 {
	if len(pq.msgs) == 0 {
		return pq.next
	}
	return slices.Min(slices.Collect(maps.Keys(pq.msgs)))
}

// full reports whether pulling must pause: more cached messages, bytes or
// offset span than the thresholds allow.
func (pq *processQueue) full(cs *consumerConfig) bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if len(pq.msgs) > cs.maxMsgs || pq.bytes > cs.maxBytes {
		return true
	}
	if len(pq.msgs) < 2 {
		return false
	}
	lo, hi := int64(-1), int64(-1)
	for o := range pq.msgs {
		if lo < 0 || o < lo {
			lo = o
		}
		hi = max(hi, o)
	}
	return hi-lo > cs.maxSpan
}

// drop marks the queue as no longer ours: its acknowledgements no longer
// move offsets.
func (pq *processQueue) drop() {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.dropped = true
	pq.signal()
}

func (pq *processQueue) isDropped() bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.dropped
}

// head returns the n cached messages of smallest offset, in offset order
// (orderly consumption); they stay cached until removed.
func (pq *processQueue) head(n int) []*message.MessageExt {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	offs := slices.Sorted(maps.Keys(pq.msgs))
	out := make([]*message.MessageExt, 0, min(n, len(offs)))
	for _, o := range offs[:min(n, len(offs))] {
		out = append(out, pq.msgs[o])
	}
	return out
}

// count returns the number of cached messages.
func (pq *processQueue) count() int {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return len(pq.msgs)
}

// info is the queue's ProcessQueueInfo for running info (locked and the
// lock time are the caller's).
func (pq *processQueue) info() protocol.ProcessQueueInfo {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	in := protocol.ProcessQueueInfo{CommitOffset: pq.commitOffsetLocked(), CachedMsgCount: int64(len(pq.msgs)),
		CachedMsgSizeInMiB: pq.bytes >> 20, Droped: pq.dropped, LastPullTimestamp: pq.lastPull,
		LastConsumeTimestamp: pq.lastConsume}
	first := true
	for o := range pq.msgs {
		if first || o < in.CachedMsgMinOffset {
			in.CachedMsgMinOffset = o
		}
		in.CachedMsgMaxOffset = max(in.CachedMsgMaxOffset, o)
		first = false
	}
	return in
}
