// Package wallclock is the wall clock of the broker's timestamps and due
// times: time.Now, stepped by an offset that only fault injection sets.
//
// Durations and timeouts use time.Now's monotonic reading and are not
// affected by a step of the wall clock; what is affected, and what this
// package serves, is every wall time the broker stores or compares with a
// stored one: store timestamps, the due times of delayed, timer and
// retried messages, the age of half messages and of segments. The chaos
// suite steps a node's clock forward and back through a file the broker
// polls (--fault-clock-file): containers share the host's kernel clock,
// which cannot be stepped for one of them (docs/RELIABILITY.md).
package wallclock

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// offset is added to time.Now, in nanoseconds.
var offset atomic.Int64

// Now is the wall clock: time.Now plus the offset. A stepped clock carries
// no monotonic reading, as a wall time read after a real step would not
// agree with the monotonic clock either.
func Now() time.Time {
	t := time.Now()
	if o := offset.Load(); o != 0 {
		return t.Round(0).Add(time.Duration(o))
	}
	return t
}

// UnixMilli is Now in Unix milliseconds.
func UnixMilli() int64 { return Now().UnixMilli() }

// Offset is the current step of the clock.
func Offset() time.Duration { return time.Duration(offset.Load()) }

// SetOffset steps the clock to time.Now plus d and returns the previous
// offset. For fault injection and tests.
func SetOffset(d time.Duration) time.Duration { return time.Duration(offset.Swap(int64(d))) }

// pollEvery is how often WatchFile reads its file.
const pollEvery = 50 * time.Millisecond

// WatchFile sets the offset from path, a decimal number of milliseconds,
// every 50 ms until ctx ends; a missing or empty file is offset 0. It is
// the fault injector's handle (--fault-clock-file) and reports steps
// through logf.
func WatchFile(ctx context.Context, path string, logf func(format string, args ...any)) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		d, err := readOffset(path)
		if err != nil {
			logf("fault clock file %s: %v", path, err)
		} else if prev := SetOffset(d); prev != d {
			logf("fault injection: wall clock stepped from %v to %v", prev, d)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// readOffset reads a WatchFile file.
func readOffset(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return Offset(), err
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, nil
	}
	ms, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return Offset(), fmt.Errorf("want milliseconds: %w", err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
