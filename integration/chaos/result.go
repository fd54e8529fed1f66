package chaos

import (
	"encoding/json"
	"math"
	"sort"
)

// Result is one run of TestContainerChaos, written as one JSON line.
type Result struct {
	// Seed reproduces the run's fault schedule (CHAOS_SEED).
	Seed int64 `json:"seed"`
	// Faults counts the injected faults by kind.
	Faults map[string]int `json:"faults"`
	// Acked counts sends acknowledged to a producer, SDKAcked those of
	// raftmq's SDK.
	Acked    int `json:"acked"`
	SDKAcked int `json:"sdk_acked"`
	// Failed counts sends that returned an error (not acknowledged),
	// SDKFailed those of raftmq's SDK.
	Failed    int `json:"failed"`
	SDKFailed int `json:"sdk_failed"`
	// Lost counts acknowledged messages the final read did not find.
	Lost int `json:"lost"`
	// Dup counts extra stored copies of a message (same key and sequence).
	Dup int `json:"dup"`
	// OrderViolations counts acknowledged messages stored before an
	// acknowledged message of the same key with a lower sequence.
	OrderViolations int `json:"order_violations"`
	// LiveMissing counts acknowledged messages each live consumer had not
	// received when the run ended, by consumer.
	LiveMissing map[string]int `json:"live_missing"`
	// UnavailMS is the longest gap between two acknowledgements of the
	// SDK's sends in each fault step, in ms, by step ("3:kill-leader").
	UnavailMS map[string]int64 `json:"unavail_ms"`
	// P50MS, P99MS and MaxMS summarize UnavailMS over the run's steps.
	P50MS int64 `json:"unavail_p50_ms"`
	P99MS int64 `json:"unavail_p99_ms"`
	MaxMS int64 `json:"unavail_max_ms"`
	// Aborted marks a run that stopped before its check (a step whose
	// group did not recover in time: see the test log); its counts are
	// those of the steps it ran.
	Aborted bool `json:"aborted,omitempty"`
	// StepFailed is why a step could not be injected or healed (an
	// add-voter that timed out, say): the run stopped injecting there but
	// healed everything and was checked; it counts as failed.
	StepFailed string `json:"step_failed,omitempty"`
	// DurationS is the run's wall time in seconds.
	DurationS float64 `json:"duration_s"`
	// Time is when the run ended (RFC 3339, UTC).
	Time string `json:"time"`
}

// Line is r as one JSON line without its newline.
func (r *Result) Line() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Summarize sets P50MS, P99MS and MaxMS from UnavailMS.
func (r *Result) Summarize() {
	var v []int64
	for _, ms := range r.UnavailMS {
		v = append(v, ms)
	}
	r.P50MS, r.P99MS, r.MaxMS = Percentile(v, 50), Percentile(v, 99), Percentile(v, 100)
}

// Percentile is the nearest-rank p-th percentile of v (0 when empty).
func Percentile(v []int64, p float64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}
