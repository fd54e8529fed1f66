package broker

// The timer wheel: the leader's in-memory set of pending timer messages,
// bucketed by deliver time. Adding is O(log buckets) (a new bucket goes on
// a min-heap of bucket keys) and taking the due ones touches only due
// buckets, so a million pending timers cost memory (about 40 bytes each
// plus a heap slot per non-empty bucket), not time per tick. It is rebuilt
// from the timer queue when a node becomes leader (timer.go).

import (
	"container/heap"
	"sort"
)

// timerBucketMs is the width of one bucket. Precision stays 1 ms: the
// exact deliver times inside the earliest bucket decide the next wake-up.
const timerBucketMs = 100

// timerEntry is one pending timer message.
type timerEntry struct {
	offset    int64 // queue offset in the timer queue
	deliverMs int64
	commit    int64 // commit offset of the parked record
	size      int32
}

type timerWheel struct {
	buckets map[int64][]timerEntry
	keys    keyHeap
	n       int
}

func newTimerWheel() *timerWheel { return &timerWheel{buckets: map[int64][]timerEntry{}} }

func (w *timerWheel) add(e timerEntry) {
	k := e.deliverMs / timerBucketMs
	b, ok := w.buckets[k]
	if !ok {
		heap.Push(&w.keys, k)
	}
	w.buckets[k] = append(b, e)
	w.n++
}

// nextDue is the earliest deliver time pending, false when none is.
func (w *timerWheel) nextDue() (int64, bool) {
	if len(w.keys) == 0 {
		return 0, false
	}
	b := w.buckets[w.keys[0]]
	m := b[0].deliverMs
	for _, e := range b[1:] {
		m = min(m, e.deliverMs)
	}
	return m, true
}

// takeDue removes and returns pending entries due at nowMs in deliver-time
// order: every entry due at or before floorMs, then up to limit more,
// never splitting entries of the same deliver time. The returned time is
// the new watermark: every pending entry due at or before it was taken.
func (w *timerWheel) takeDue(nowMs, floorMs int64, limit int) ([]timerEntry, int64) {
	var taken []timerEntry
	mark := floorMs
	for len(w.keys) > 0 && w.keys[0]*timerBucketMs <= nowMs {
		k := w.keys[0]
		b := w.buckets[k]
		sort.Slice(b, func(i, j int) bool { return b[i].deliverMs < b[j].deliverMs })
		i := 0
		for ; i < len(b) && b[i].deliverMs <= nowMs; i++ {
			d := b[i].deliverMs
			if len(taken) >= limit && d > floorMs && d != taken[len(taken)-1].deliverMs {
				break
			}
			taken = append(taken, b[i])
			mark = max(mark, d)
		}
		w.n -= i
		if i == len(b) {
			delete(w.buckets, k)
			heap.Pop(&w.keys)
			continue
		}
		w.buckets[k] = b[i:]
		break // the rest of this bucket is not due, or the batch is full
	}
	return taken, mark
}

// minOffset is the lowest queue offset pending (O(n)); ok false if none.
func (w *timerWheel) minOffset() (int64, bool) {
	m, ok := int64(0), false
	for _, b := range w.buckets {
		for _, e := range b {
			if !ok || e.offset < m {
				m, ok = e.offset, true
			}
		}
	}
	return m, ok
}

// keyHeap is a min-heap of bucket keys.
type keyHeap []int64

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *keyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
