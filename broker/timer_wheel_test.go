package broker

import (
	"math/rand/v2"
	"testing"
)

func TestTimerWheelTakesInDeadlineOrder(t *testing.T) {
	w := newTimerWheel()
	for i, d := range []int64{950, 120, 130, 130, 130, 5000, 40} {
		w.add(timerEntry{offset: int64(i), deliverMs: d})
	}
	if at, ok := w.nextDue(); !ok || at != 40 {
		t.Fatalf("nextDue = %d %v, want 40", at, ok)
	}
	// Limit 2 at now=1000: 40, 120, then the three 130s are not split.
	got, mark := w.takeDue(1000, 0, 2)
	if len(got) != 2 || got[0].deliverMs != 40 || got[1].deliverMs != 120 || mark != 120 {
		t.Fatalf("first take %v mark %d", got, mark)
	}
	got, mark = w.takeDue(1000, mark, 1)
	if len(got) != 3 || mark != 130 {
		t.Fatalf("ties must not split: %v mark %d", got, mark)
	}
	// A late arrival at or before the floor is always taken.
	w.add(timerEntry{offset: 7, deliverMs: 100})
	got, mark = w.takeDue(1000, 130, 0)
	if len(got) != 1 || got[0].offset != 7 || mark != 130 {
		t.Fatalf("late arrival: %v mark %d", got, mark)
	}
	got, mark = w.takeDue(1000, mark, 10)
	if len(got) != 1 || got[0].deliverMs != 950 || mark != 950 || w.n != 1 {
		t.Fatalf("last due: %v mark %d pending %d", got, mark, w.n)
	}
	if got, _ := w.takeDue(4999, mark, 10); len(got) != 0 {
		t.Fatalf("took %v before its time", got)
	}
	if off, ok := w.minOffset(); !ok || off != 5 {
		t.Fatalf("minOffset = %d %v", off, ok)
	}
}

func TestTimerWheelRandom(t *testing.T) {
	w := newTimerWheel()
	for i := 0; i < 10000; i++ {
		w.add(timerEntry{offset: int64(i), deliverMs: rand.Int64N(99000)})
	}
	seen, last, mark := 0, int64(-1), int64(0)
	for now := int64(0); now <= 100000; now += 777 {
		for {
			got, m := w.takeDue(now, mark, 50)
			if len(got) == 0 {
				break
			}
			for _, e := range got {
				if e.deliverMs < last || e.deliverMs > now {
					t.Fatalf("took %d at now %d after %d", e.deliverMs, now, last)
				}
				last = e.deliverMs
			}
			seen += len(got)
			mark = m
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
