// Package metrics is the armon/go-metrics sink behind the broker's
// /metrics page: it keeps what it is sent (counters cumulative, gauges
// last value, samples as histograms) and writes it in the Prometheus text
// format. hashicorp/raft emits to go-metrics' global instance; Global
// routes that to one process-wide Sink.
package metrics

import (
	"strings"
	"sync"

	gometrics "github.com/armon/go-metrics"
)

// Kind is what a series is.
type Kind int

// The kinds of series.
const (
	Counter Kind = iota
	Gauge
	Histogram
)

// DefaultBuckets are the upper bounds of a histogram that has no buckets
// of its own: milliseconds, from 0.1 ms to 10 s.
var DefaultBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}

// Sink is a go-metrics MetricSink that keeps its series for WritePrometheus.
// It is safe for concurrent use.
type Sink struct {
	mu      sync.RWMutex
	series  map[string]*series // by name and labels
	buckets map[string][]float64
}

// series is one metric name with one set of label values.
type series struct {
	name   string
	labels string // rendered: {a="x",b="y"} or ""
	kind   Kind
	mu     sync.Mutex
	value  float64   // counter sum or gauge value
	counts []uint64  // histogram: per bucket (not cumulative), +Inf last
	sum    float64   // histogram
	bounds []float64 // histogram
}

// NewSink is an empty sink. buckets gives the histogram bounds of
// particular metric names (after sanitising: see Name); others use
// DefaultBuckets.
func NewSink(buckets map[string][]float64) *Sink {
	return &Sink{series: map[string]*series{}, buckets: buckets}
}

var _ gometrics.MetricSink = (*Sink)(nil)

// SetGauge implements gometrics.MetricSink.
func (s *Sink) SetGauge(key []string, val float32) { s.SetGaugeWithLabels(key, val, nil) }

// SetGaugeWithLabels implements gometrics.MetricSink.
func (s *Sink) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	s.Set(Name(key), float64(val), labels)
}

// EmitKey implements gometrics.MetricSink as a gauge.
func (s *Sink) EmitKey(key []string, val float32) { s.SetGauge(key, val) }

// IncrCounter implements gometrics.MetricSink.
func (s *Sink) IncrCounter(key []string, val float32) { s.IncrCounterWithLabels(key, val, nil) }

// IncrCounterWithLabels implements gometrics.MetricSink.
func (s *Sink) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	s.Add(Name(key), float64(val), labels)
}

// AddSample implements gometrics.MetricSink.
func (s *Sink) AddSample(key []string, val float32) { s.AddSampleWithLabels(key, val, nil) }

// AddSampleWithLabels implements gometrics.MetricSink.
func (s *Sink) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	s.Observe(Name(key), float64(val), labels)
}

// Set sets gauge name to v.
func (s *Sink) Set(name string, v float64, labels []gometrics.Label) {
	sr := s.get(name, Gauge, labels)
	sr.mu.Lock()
	sr.value = v
	sr.mu.Unlock()
}

// Add adds v to counter name.
func (s *Sink) Add(name string, v float64, labels []gometrics.Label) {
	sr := s.get(name, Counter, labels)
	sr.mu.Lock()
	sr.value += v
	sr.mu.Unlock()
}

// Observe records v in histogram name.
func (s *Sink) Observe(name string, v float64, labels []gometrics.Label) {
	sr := s.get(name, Histogram, labels)
	i := 0
	for i < len(sr.bounds) && v > sr.bounds[i] {
		i++
	}
	sr.mu.Lock()
	sr.counts[i]++
	sr.sum += v
	sr.mu.Unlock()
}

// ObserveEach records n observations of one histogram series, the i-th
// value(i), finding the series once: a send's per-message sizes.
func (s *Sink) ObserveEach(name string, labels []gometrics.Label, n int, value func(i int) float64) {
	if n <= 0 {
		return
	}
	sr := s.get(name, Histogram, labels)
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for k := range n {
		v := value(k)
		i := 0
		for i < len(sr.bounds) && v > sr.bounds[i] {
			i++
		}
		sr.counts[i]++
		sr.sum += v
	}
}

// get finds or creates the series; a name used with another kind before
// keeps its first kind's series apart under the same name and labels.
func (s *Sink) get(name string, kind Kind, labels []gometrics.Label) *series {
	lb := renderLabels(labels)
	id := name + lb
	s.mu.RLock()
	sr := s.series[id]
	s.mu.RUnlock()
	if sr != nil {
		return sr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sr = s.series[id]; sr != nil {
		return sr
	}
	sr = &series{name: name, labels: lb, kind: kind}
	if kind == Histogram {
		sr.bounds = DefaultBuckets
		if b, ok := s.buckets[name]; ok {
			sr.bounds = b
		}
		sr.counts = make([]uint64, len(sr.bounds)+1)
	}
	s.series[id] = sr
	return sr
}

// Name is a go-metrics key as a Prometheus metric name: its parts joined
// by '_', every character outside [a-zA-Z0-9_:] replaced by '_'.
func Name(key []string) string {
	n := strings.Join(key, "_")
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == ':':
			return r
		}
		return '_'
	}, n)
}
