package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// Result is what one workload measured.
type Result struct {
	// Workload names it: "produce", "consume" or "e2e".
	Workload string
	// Mode is the send mode (sync, async, batch); "pull" for consume.
	Mode    string
	Size    int
	Clients int
	Queues  int
	// Msgs and Bytes count the messages (and their body bytes) acknowledged
	// (produce) or received (consume, e2e).
	Msgs  uint64
	Bytes uint64
	// Errors counts failed sends or pulls; FirstError is the first.
	Errors     uint64
	FirstError error
	Elapsed    time.Duration
	// Latency is per message: ack latency for produce, send to receipt for
	// e2e, empty for consume.
	Latency *Histogram
}

// MsgsPerSec is the message rate over Elapsed.
func (r *Result) MsgsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Msgs) / r.Elapsed.Seconds()
}

// MiBPerSec is the body byte rate over Elapsed in MiB/s.
func (r *Result) MiBPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / (1 << 20) / r.Elapsed.Seconds()
}

// ms formats d as milliseconds with three decimals.
func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }

// Summary writes a human summary and one machine-readable line:
//
//	raftmq-bench workload=produce mode=async ... msgs_per_sec=N p50_ms=... p99_ms=...
//
// which scripts/bench.sh parses.
func (r *Result) Summary(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s %s: %d msgs of %d B, %d clients, %d queues, in %.2fs: %.0f msg/s, %.2f MiB/s, %d errors\n",
		r.Workload, r.Mode, r.Msgs, r.Size, r.Clients, r.Queues, r.Elapsed.Seconds(), r.MsgsPerSec(), r.MiBPerSec(), r.Errors)
	if err != nil {
		return err
	}
	if r.FirstError != nil {
		if _, err := fmt.Fprintf(w, "  first error: %v\n", r.FirstError); err != nil {
			return err
		}
	}
	h := r.Latency
	if h != nil && h.Count() > 0 {
		_, err = fmt.Fprintf(w, "  latency ms: min %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %s\n",
			ms(h.Min()), ms(h.Quantile(0.5)), ms(h.Quantile(0.9)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999)), ms(h.Max()), ms(h.Mean()))
		if err != nil {
			return err
		}
	}
	rec := r.record()
	line := "raftmq-bench"
	for i, k := range csvHeader {
		line += " " + k + "=" + rec[i]
	}
	_, err = fmt.Fprintln(w, line)
	return err
}

var csvHeader = []string{"time", "workload", "mode", "size", "clients", "queues", "msgs", "errors",
	"elapsed_s", "msgs_per_sec", "mib_per_sec", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"}

func (r *Result) record() []string {
	h := r.Latency
	if h == nil {
		h = NewHistogram()
	}
	return []string{time.Now().UTC().Format(time.RFC3339), r.Workload, r.Mode, strconv.Itoa(r.Size),
		strconv.Itoa(r.Clients), strconv.Itoa(r.Queues), strconv.FormatUint(r.Msgs, 10), strconv.FormatUint(r.Errors, 10),
		strconv.FormatFloat(r.Elapsed.Seconds(), 'f', 3, 64), strconv.FormatFloat(r.MsgsPerSec(), 'f', 0, 64),
		strconv.FormatFloat(r.MiBPerSec(), 'f', 2, 64), ms(h.Quantile(0.5)), ms(h.Quantile(0.9)),
		ms(h.Quantile(0.99)), ms(h.Quantile(0.999)), ms(h.Max())}
}

// WriteCSV appends r as one row to the CSV file at path, writing the
// header first when the file is new or empty.
func (r *Result) WriteCSV(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	cw := csv.NewWriter(f)
	if st.Size() == 0 {
		_ = cw.Write(csvHeader)
	}
	_ = cw.Write(r.record())
	cw.Flush()
	if err := cw.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
