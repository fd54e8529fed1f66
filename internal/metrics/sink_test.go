package metrics

import (
	"strings"
	"sync"
	"testing"

	gometrics "github.com/armon/go-metrics"
)

func scrape(t *testing.T, s *Sink) string {
	t.Helper()
	var b strings.Builder
	if err := s.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSinkPrometheusText(t *testing.T) {
	s := NewSink(map[string][]float64{"rpc_ms": {1, 10}})
	m := New(s)
	lb := []gometrics.Label{{Name: "topic", Value: `a"b\c`}, {Name: "consumer-group", Value: "g\n1"}}
	m.IncrCounterWithLabels([]string{"rocketmq_messages_in_total"}, 3, lb)
	m.IncrCounterWithLabels([]string{"rocketmq_messages_in_total"}, 4, lb)
	m.SetGauge([]string{"raft", "state", "leader"}, 1)
	m.SetGauge([]string{"raft", "state", "leader"}, 0)
	for _, v := range []float32{0.5, 1, 5, 50} {
		m.AddSample([]string{"rpc_ms"}, v)
	}
	got := scrape(t, s)
	want := `# TYPE raft_state_leader gauge
raft_state_leader 0
# TYPE rocketmq_messages_in_total counter
rocketmq_messages_in_total{topic="a\"b\\c",consumer_group="g\n1"} 7
# TYPE rpc_ms histogram
rpc_ms_bucket{le="1"} 2
rpc_ms_bucket{le="10"} 3
rpc_ms_bucket{le="+Inf"} 4
rpc_ms_sum 56.5
rpc_ms_count 4
`
	if got != want {
		t.Fatalf("scrape:\n%s\nwant:\n%s", got, want)
	}
	s.Reset("rpc_ms")
	if strings.Contains(scrape(t, s), "rpc_ms") {
		t.Fatal("Reset kept the series")
	}
}

func TestSinkConcurrentCounters(t *testing.T) {
	s := NewSink(nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				s.Add("c", 1, []gometrics.Label{{Name: "k", Value: "v"}})
				s.Observe("h", float64(i%20), nil)
			}
		}()
	}
	wg.Wait()
	got := scrape(t, s)
	for _, want := range []string{`c{k="v"} 8000`, `h_count 8000`, `h_bucket{le="+Inf"} 8000`} {
		if !strings.Contains(got, want) {
			t.Errorf("scrape lacks %q:\n%s", want, got)
		}
	}
}

func TestGlobalReceivesPackageLevelMetrics(t *testing.T) {
	g := Global()
	gometrics.IncrCounter([]string{"raft", "apply"}, 2)
	if got := scrape(t, g); !strings.Contains(got, "raft_apply 2") {
		t.Fatalf("global sink:\n%s", got)
	}
}
