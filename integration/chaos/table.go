package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ReadResults reads JSON lines of Results; blank lines are skipped.
func ReadResults(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var res Result
		if err := json.Unmarshal([]byte(text), &res); err != nil {
			return out, fmt.Errorf("chaos: line %d: %w", line, err)
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// Table renders the runs as docs/RELIABILITY.md's Markdown: one summary
// row over every run, then our SDK's unavailability by fault kind (the
// longest gap between acknowledgements of each step, over every step of
// that kind).
func Table(runs []Result) string {
	var b strings.Builder
	faults, steps := map[string]int{}, map[string][]int64{}
	var acked, sdkAcked, lost, dup, order, failed, sdkFailed, aborted, stepFailed int
	var all []int64
	for _, r := range runs {
		acked, sdkAcked, lost, dup, order = acked+r.Acked, sdkAcked+r.SDKAcked, lost+r.Lost, dup+r.Dup, order+r.OrderViolations
		failed, sdkFailed = failed+r.Failed, sdkFailed+r.SDKFailed
		if r.Aborted {
			aborted++
		}
		if r.StepFailed != "" {
			stepFailed++
		}
		for k, n := range r.Faults {
			faults[k] += n
		}
		for step, ms := range r.UnavailMS {
			kind := step[strings.Index(step, ":")+1:]
			steps[kind] = append(steps[kind], ms)
			all = append(all, ms)
		}
	}
	fmt.Fprintln(&b, "| runs (aborted / a step failed) | faults | acknowledged (our SDK) | failed sends (our SDK) | lost | duplicates | order violations | unavailability p50 / p99 / max |")
	fmt.Fprintln(&b, "|---:|---|---:|---:|---:|---:|---:|---|")
	fmt.Fprintf(&b, "| %d (%d / %d) | %s | %d (%d) | %d (%d) | **%d** | %d | **%d** | %s |\n\n",
		len(runs), aborted, stepFailed, faultList(faults), acked, sdkAcked, failed, sdkFailed, lost, dup, order, spread(all))
	fmt.Fprintln(&b, "| fault | steps | our SDK's unavailability p50 / p99 / max |")
	fmt.Fprintln(&b, "|---|---:|---|")
	for _, kind := range sortedKeys(steps) {
		fmt.Fprintf(&b, "| %s | %d | %s |\n", kind, len(steps[kind]), spread(steps[kind]))
	}
	return b.String()
}

// faultList is "kill-leader 3, pause-follower 2, …" (total first).
func faultList(faults map[string]int) string {
	total := 0
	var parts []string
	for _, k := range sortedKeys(faults) {
		total += faults[k]
		parts = append(parts, fmt.Sprintf("%s %d", k, faults[k]))
	}
	return fmt.Sprintf("%d: %s", total, strings.Join(parts, ", "))
}

// spread is "p50 / p99 / max" in seconds.
func spread(ms []int64) string {
	s := func(v int64) string { return fmt.Sprintf("%.2f s", float64(v)/1000) }
	return s(Percentile(ms, 50)) + " / " + s(Percentile(ms, 99)) + " / " + s(Percentile(ms, 100))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
