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

	"github.com/raftmq/raftmq/broker/meta"
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

// timerTake bounds one takeDue.
type timerTake struct {
	limit      int  // at most this many entries
	limitBytes int  // and this many record bytes,
	oneOver    bool // except that the first entry is taken whatever its size
}

// takeDue removes and returns pending entries due at nowMs in (deliver
// time, offset) order, within the bounds: a millisecond with more entries
// than a round carries is split. mark is the deliver time of the last one
// taken and tie the offset of the first entry left at that same time
// (meta.TimerAllTies when none is), so that "due before mark, or at mark
// below tie" is exactly what was taken (timer.go's progress K).
func (w *timerWheel) takeDue(nowMs int64, b timerTake) (taken []timerEntry, mark, tie int64) {
	bytes := 0
	tie = meta.TimerAllTies
	for len(w.keys) > 0 && w.keys[0]*timerBucketMs <= nowMs {
		k := w.keys[0]
		bk := w.buckets[k]
		sort.Slice(bk, func(i, j int) bool {
			if bk[i].deliverMs != bk[j].deliverMs {
				return bk[i].deliverMs < bk[j].deliverMs
			}
			return bk[i].offset < bk[j].offset
		})
		i, full := 0, false
		for ; i < len(bk) && bk[i].deliverMs <= nowMs; i++ {
			size := int(bk[i].size)
			if len(taken) >= b.limit || (bytes+size > b.limitBytes && !(b.oneOver && len(taken) == 0)) {
				full = true
				break
			}
			taken = append(taken, bk[i])
			bytes += size
			mark = bk[i].deliverMs
		}
		w.n -= i
		if full && i < len(bk) && len(taken) > 0 && bk[i].deliverMs == mark {
			tie = bk[i].offset
		}
		if i == len(bk) {
			delete(w.buckets, k)
			heap.Pop(&w.keys)
			continue
		}
		w.buckets[k] = bk[i:]
		break // the rest of this bucket is not due, or the round is full
	}
	return taken, mark, tie
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
