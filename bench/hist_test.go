package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// reference is the nearest-rank q-quantile of sorted.
func reference(sorted []uint64, q float64) uint64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func TestBucketsCoverEveryValue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(v uint64) {
		i := bucketOf(v)
		if i < 0 || i >= bucketCount {
			t.Fatalf("bucketOf(%d) = %d, out of [0, %d)", v, i, bucketCount)
		}
		lo, hi := bucketRange(i)
		if v < lo || v > hi {
			t.Fatalf("bucketOf(%d) = %d covering [%d, %d]", v, i, lo, hi)
		}
		if lo >= 2*subCount && float64(hi-lo+1) > float64(lo)/subCount {
			t.Fatalf("bucket %d [%d, %d] wider than 1/%d of its bound", i, lo, hi, subCount)
		}
	}
	for v := range uint64(4096) {
		check(v)
	}
	for range 100000 {
		check(r.Uint64() >> r.IntN(64))
	}
	check(math.MaxUint64)
	// Adjacent buckets tile the line: each starts one past the previous end.
	for i := 1; i < bucketCount; i++ {
		_, prevHi := bucketRange(i - 1)
		lo, _ := bucketRange(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, bucket %d ends at %d", i, lo, i-1, prevHi)
		}
	}
}

func TestQuantilesAgainstSortedReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dists := map[string]func() uint64{
		"uniform-us":  func() uint64 { return uint64(r.IntN(1000)) * 1000 },
		"exp-ms":      func() uint64 { return uint64(r.ExpFloat64() * 2e6) },
		"lognormal":   func() uint64 { return uint64(math.Exp(r.NormFloat64()*1.5 + 13)) },
		"tiny-exact":  func() uint64 { return uint64(r.IntN(200)) },
		"bimodal-far": func() uint64 { return []uint64{500_000, 900_000_000}[r.IntN(2)] + uint64(r.IntN(1000)) },
	}
	for name, gen := range dists {
		for _, n := range []int{1, 2, 7, 1000, 50000} {
			h := NewHistogram()
			vals := make([]uint64, n)
			for i := range vals {
				vals[i] = gen()
				h.Record(time.Duration(vals[i]))
			}
			slices.Sort(vals)
			for _, q := range []float64{0.001, 0.5, 0.9, 0.99, 0.999, 1} {
				got, want := uint64(h.Quantile(q)), reference(vals, q)
				// Midpoint of a bucket at most want/128 wide: within want/256.
				if diff := math.Abs(float64(got) - float64(want)); diff > float64(want)/(2*subCount)+0.5 {
					t.Errorf("%s n=%d q=%v: got %d, want %d (±%.0f)", name, n, q, got, want, float64(want)/(2*subCount))
				}
			}
			if h.Count() != uint64(n) || uint64(h.Min()) != vals[0] || uint64(h.Max()) != vals[n-1] {
				t.Errorf("%s n=%d: count %d min %d max %d, want %d %d %d", name, n, h.Count(), h.Min(), h.Max(), n, vals[0], vals[n-1])
			}
		}
	}
}

func TestMergeAndRecordN(t *testing.T) {
	a, b, both := NewHistogram(), NewHistogram(), NewHistogram()
	for i := 1; i <= 1000; i++ {
		d := time.Duration(i) * time.Microsecond
		if i%3 == 0 {
			a.RecordN(d, 2)
		} else {
			b.Record(d)
		}
	}
	for i := 1; i <= 1000; i++ {
		n := uint64(1)
		if i%3 == 0 {
			n = 2
		}
		both.RecordN(time.Duration(i)*time.Microsecond, n)
	}
	a.Merge(b)
	for _, q := range []float64{0.1, 0.5, 0.99, 1} {
		if a.Quantile(q) != both.Quantile(q) {
			t.Errorf("q=%v: merged %v, recorded together %v", q, a.Quantile(q), both.Quantile(q))
		}
	}
	if a.Count() != both.Count() || a.Min() != both.Min() || a.Max() != both.Max() || a.Mean() != both.Mean() {
		t.Errorf("merged %d/%v/%v/%v, together %d/%v/%v/%v", a.Count(), a.Min(), a.Max(), a.Mean(), both.Count(), both.Min(), both.Max(), both.Mean())
	}
}

func TestEmptyHistogram(t *testing.T) {
	h := NewHistogram()
	if h.Quantile(0.99) != 0 || h.Min() != 0 || h.Max() != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Fatal("empty histogram reports non-zero")
	}
	h.Record(-time.Second)
	if h.Quantile(0.5) != 0 || h.Count() != 1 {
		t.Fatalf("negative duration: quantile %v count %d, want 0 and 1", h.Quantile(0.5), h.Count())
	}
}
