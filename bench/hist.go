package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// subBits is the number of bits of precision kept per power of two: each
// bucket is at most 1/2^subBits of its lower bound wide, and the value
// reported for it (its midpoint) is within half that of any value in it.
const subBits = 7

const (
	subCount    = 1 << subBits
	bucketCount = (64 - subBits + 1) * subCount
)

// Histogram records durations (non-negative nanoseconds) in log-linear
// buckets, like an HDR histogram: values below 2^subBits ns exactly, larger
// ones with a relative error of at most 1/2^(subBits+1). Record is safe for
// concurrent use; the zero value is not usable, call NewHistogram.
type Histogram struct {
	counts []atomic.Uint64
	total  atomic.Uint64
	sum    atomic.Uint64
	min    atomic.Uint64 // math.MaxUint64 while empty
	max    atomic.Uint64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	h := &Histogram{counts: make([]atomic.Uint64, bucketCount)}
	h.min.Store(math.MaxUint64)
	return h
}

// bucketOf is the bucket index of v: v itself below 2^(subBits+1), else the
// top subBits+1 bits of v offset by the power of two they were shifted by.
func bucketOf(v uint64) int {
	if v < 2*subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	return shift*subCount + int(v>>shift)
}

// bucketRange is the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < 2*subCount {
		return uint64(i), uint64(i)
	}
	shift := i/subCount - 1
	m := uint64(i%subCount) | subCount
	return m << shift, (m+1)<<shift - 1
}

// Record adds one observation of d (negative durations count as 0).
func (h *Histogram) Record(d time.Duration) { h.RecordN(d, 1) }

// RecordN adds n observations of d, e.g. every message of a batch that was
// acknowledged at once.
func (h *Histogram) RecordN(d time.Duration, n uint64) {
	if n == 0 {
		return
	}
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)].Add(n)
	h.total.Add(n)
	h.sum.Add(v * n)
	h.bound(v)
}

// bound widens [min, max] to include v.
func (h *Histogram) bound(v uint64) {
	for {
		old := h.min.Load()
		if v >= old || h.min.CompareAndSwap(old, v) {
			break
		}
	}
	for {
		old := h.max.Load()
		if v <= old || h.max.CompareAndSwap(old, v) {
			break
		}
	}
}

// Merge adds every observation of o to h. o must not be recorded into
// meanwhile.
func (h *Histogram) Merge(o *Histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c > 0 {
			h.counts[i].Add(c)
		}
	}
	h.total.Add(o.total.Load())
	h.sum.Add(o.sum.Load())
	if o.total.Load() > 0 {
		h.bound(o.min.Load())
		h.bound(o.max.Load())
	}
}

// Count is the number of observations.
func (h *Histogram) Count() uint64 { return h.total.Load() }

// Min is the smallest observation (0 when empty).
func (h *Histogram) Min() time.Duration {
	if h.Count() == 0 {
		return 0
	}
	return time.Duration(h.min.Load())
}

// Max is the largest observation (0 when empty).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Mean is the average observation (0 when empty).
func (h *Histogram) Mean() time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Quantile returns the q-quantile (0 < q ≤ 1) by the nearest-rank method:
// the value of the ceil(q·n)-th smallest observation, to within the
// bucket's precision, clamped to [Min, Max]. It is 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			lo, hi := bucketRange(i)
			v := lo + (hi-lo)/2
			v = min(max(v, h.min.Load()), h.max.Load())
			return time.Duration(v)
		}
	}
	return h.Max()
}
