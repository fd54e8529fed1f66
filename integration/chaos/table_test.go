package chaos

import (
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	in := `{"seed":1,"faults":{"kill-leader":1,"flap":1},"acked":100,"sdk_acked":80,"failed":3,"sdk_failed":1,"lost":0,"dup":1,"order_violations":0,"unavail_ms":{"00:kill-leader":1200,"01:flap":300}}

{"seed":2,"faults":{"kill-leader":1},"acked":50,"sdk_acked":40,"unavail_ms":{"00:kill-leader":800}}
`
	runs, err := ReadResults(strings.NewReader(in))
	if err != nil || len(runs) != 2 {
		t.Fatalf("ReadResults = %d runs, %v", len(runs), err)
	}
	got := Table(runs)
	for _, want := range []string{
		"| 2 (0 / 0) | 3: flap 1, kill-leader 2 | 150 (120) | 3 (1) | **0** | 1 | **0** | 0.80 s / 1.20 s / 1.20 s |",
		"| flap | 1 | 0.30 s / 0.30 s / 0.30 s |",
		"| kill-leader | 2 | 0.80 s / 1.20 s / 1.20 s |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if _, err := ReadResults(strings.NewReader("{nope\n")); err == nil {
		t.Error("a malformed line was accepted")
	}
}

func TestPercentile(t *testing.T) {
	v := []int64{5, 1, 4, 2, 3}
	for _, c := range []struct {
		p    float64
		want int64
	}{{50, 3}, {99, 5}, {100, 5}, {1, 1}} {
		if got := Percentile(v, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %d, want %d", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("empty percentile is not 0")
	}
}
