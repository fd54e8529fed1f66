package broker

import (
	"math/rand/v2"
	"testing"

	"github.com/raftmq/raftmq/broker/meta"
)

func take(n int) timerTake { return timerTake{limit: n, limitBytes: 1 << 30, oneOver: true} }

func TestTimerWheelTakesInDeadlineOrder(t *testing.T) {
	w := newTimerWheel()
	for i, d := range []int64{950, 120, 130, 130, 130, 5000, 40} {
		w.add(timerEntry{offset: int64(i), deliverMs: d, size: 10})
	}
	if at, ok := w.nextDue(); !ok || at != 40 {
		t.Fatalf("nextDue = %d %v, want 40", at, ok)
	}
	// Limit 2 at now=1000: 40, 120; nothing else at 120.
	got, mark, tie := w.takeDue(1000, take(2))
	if len(got) != 2 || got[0].deliverMs != 40 || got[1].deliverMs != 120 || mark != 120 || tie != meta.TimerAllTies {
		t.Fatalf("first take %v mark %d tie %d", got, mark, tie)
	}
	// Limit 2 splits the three 130s, in offset order: the tie cursor is
	// the offset of the one left.
	got, mark, tie = w.takeDue(1000, take(2))
	if len(got) != 2 || got[0].offset != 2 || got[1].offset != 3 || mark != 130 || tie != 4 {
		t.Fatalf("split tie: %v mark %d tie %d", got, mark, tie)
	}
	got, mark, tie = w.takeDue(1000, take(10))
	if len(got) != 2 || got[0].offset != 4 || got[1].deliverMs != 950 || mark != 950 || tie != meta.TimerAllTies || w.n != 1 {
		t.Fatalf("rest of the tie and the last due: %v mark %d tie %d pending %d", got, mark, tie, w.n)
	}
	if got, _, _ := w.takeDue(4999, take(10)); len(got) != 0 {
		t.Fatalf("took %v before its time", got)
	}
	if off, ok := w.minOffset(); !ok || off != 5 {
		t.Fatalf("minOffset = %d %v", off, ok)
	}
}

func TestTimerWheelBytesBound(t *testing.T) {
	w := newTimerWheel()
	for i := range 10 {
		w.add(timerEntry{offset: int64(i), deliverMs: 7, size: 400})
	}
	// 1000 bytes carry two 400-byte entries of the same millisecond.
	got, mark, tie := w.takeDue(7, timerTake{limit: 100, limitBytes: 1000})
	if len(got) != 2 || mark != 7 || tie != 2 {
		t.Fatalf("bytes-bounded take: %d entries, mark %d tie %d", len(got), mark, tie)
	}
	// Without oneOver nothing bigger than the bound is taken; with it, one.
	if got, _, _ := w.takeDue(7, timerTake{limit: 100, limitBytes: 100}); len(got) != 0 {
		t.Fatalf("took %d entries over the byte bound", len(got))
	}
	if got, _, tie := w.takeDue(7, timerTake{limit: 100, limitBytes: 100, oneOver: true}); len(got) != 1 || tie != 3 {
		t.Fatalf("oneOver: %d entries, tie %d", len(got), tie)
	}
}

func TestTimerWheelRandom(t *testing.T) {
	w := newTimerWheel()
	for i := 0; i < 10000; i++ {
		w.add(timerEntry{offset: int64(i), deliverMs: rand.Int64N(99000)})
	}
	seen, lastMs, lastOff := 0, int64(-1), int64(-1)
	for now := int64(0); now <= 100000; now += 777 {
		for {
			got, _, _ := w.takeDue(now, take(50))
			if len(got) == 0 {
				break
			}
			for _, e := range got {
				if e.deliverMs < lastMs || (e.deliverMs == lastMs && e.offset < lastOff) || e.deliverMs > now {
					t.Fatalf("took %d@%d at now %d after %d@%d", e.offset, e.deliverMs, now, lastOff, lastMs)
				}
				lastMs, lastOff = e.deliverMs, e.offset
			}
			seen += len(got)
		}
	}
	if seen != 10000 || w.n != 0 || len(w.buckets) != 0 {
		t.Fatalf("took %d, %d pending, %d buckets", seen, w.n, len(w.buckets))
	}
}

// BenchmarkTimerWheelAdd is the per-timer cost the leader's scheduler
// pays when it indexes a parked timer, with a million already pending.
func BenchmarkTimerWheelAdd(b *testing.B) {
	w := newTimerWheel()
	const week = 7 * 24 * 3600 * 1000
	for i := 0; i < 1_000_000; i++ {
		w.add(timerEntry{offset: int64(i), deliverMs: rand.Int64N(week)})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.add(timerEntry{offset: int64(i), deliverMs: rand.Int64N(week)})
	}
}

// TestTimerRunFilesEntries: on a rebuild, an indexed entry is skipped when
// the progress (with its tie cursor) says it is delivered, kept apart as a
// late arrival when O's advance would say so, and put on the wheel
// otherwise.
func TestTimerRunFilesEntries(t *testing.T) {
	r := &timerRun{prog: meta.TimerProgress{O: 10, T: 100, L: 0, K: 5}, wheel: newTimerWheel()}
	for _, e := range []timerEntry{
		{offset: 3, deliverMs: 100}, // delivered: at T below K
		{offset: 4, deliverMs: 50},  // delivered: before T
		{offset: 6, deliverMs: 100}, // pending: at T from K on
		{offset: 7, deliverMs: 150}, // pending: after T
		{offset: 11, deliverMs: 90}, // late: O's advance would count it
		{offset: 12, deliverMs: 100},
		{offset: 13, deliverMs: 200},
	} {
		r.add(e)
	}
	if len(r.late) != 1 || r.late[0].offset != 11 {
		t.Fatalf("late arrivals %v, want offset 11", r.late)
	}
	if r.wheel.n != 4 {
		t.Fatalf("wheel holds %d, want 4 (offsets 6, 7, 12, 13)", r.wheel.n)
	}
	got, mark, tie := r.wheel.takeDue(100, take(1))
	if len(got) != 1 || got[0].offset != 6 || mark != 100 || tie != 12 {
		t.Fatalf("first due: %v mark %d tie %d, want offset 6 then tie 12", got, mark, tie)
	}
}
