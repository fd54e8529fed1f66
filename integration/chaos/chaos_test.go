package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Short-run settings: `make test` runs one run of shortFaults steps on
// shortSeed; CHAOS_RUNS=N runs N runs of longFaults steps on fresh seeds
// (CHAOS_SEED=s replays one).
const (
	shortSeed   = 2418 // kill-leader, disk-full, partition-leader, oneway-follower, membership, clock-jump
	shortFaults = 6
	longFaults  = 14
	// minAcksAfterHeal is how many new acknowledgements of our SDK's
	// sends mark a step as recovered.
	minAcksAfterHeal = 20
	// slowGap is the unavailability past which a step logs what the
	// nodes logged meanwhile (elections, refused writes).
	slowGap = 2 * time.Second
	// dupBound fails a run whose duplicates reach this share of acks.
	dupBound = 0.001
)

// TestContainerChaos: real processes in containers on a private network,
// faults injected from outside, ordered load from two clients, and a
// checker of what was acknowledged against what is stored.
func TestContainerChaos(t *testing.T) {
	requireHost(t)
	sweepStale(t)
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(os.TempDir(), runID)) })
	image, bin := buildImage(t)
	runs, seeds, steps := plan(t)
	for i := range runs {
		t.Run(fmt.Sprintf("run%d-seed%d", i, seeds[i]), func(t *testing.T) {
			res := &Result{Seed: seeds[i], Faults: map[string]int{}, UnavailMS: map[string]int64{}, LiveMissing: map[string]int{}}
			// A run that stops half-way (a group that did not recover)
			// still leaves its line, marked, so a table counts it.
			defer func() {
				if res.Time == "" {
					res.Aborted = true
					res.Time = time.Now().UTC().Format(time.RFC3339)
				}
				line := res.Line()
				t.Logf("CHAOS %s", line)
				appendOut(t, line)
			}()
			chaosRun(t, res, image, bin, i, steps)
			verdictOf(t, res)
		})
	}
}

// plan reads CHAOS_RUNS and CHAOS_SEED.
func plan(t *testing.T) (runs int, seeds []int64, steps int) {
	runs, steps = 1, shortFaults
	if s := os.Getenv("CHAOS_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CHAOS_RUNS=%q: want a positive count", s)
		}
		runs, steps = n, longFaults
	}
	base := int64(shortSeed)
	if runs > 1 || os.Getenv("CHAOS_RUNS") != "" {
		base = time.Now().UnixNano()
	}
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
		base = v
	}
	for i := range runs {
		seeds = append(seeds, base+int64(i))
	}
	return runs, seeds, steps
}

// chaosRun is one run: a fresh cluster, load, the schedule, the check.
func chaosRun(t *testing.T, res *Result, image, bin string, run int, steps int) {
	began, seed := time.Now(), res.Seed
	t.Logf("chaos seed %d (replay: CHAOS_SEED=%d CHAOS_RUNS=1), %d faults", seed, seed, steps)
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)>>1|1))
	c := startCluster(t, image, bin, run)
	c.createTopic()
	l := newLedger()
	ld := startLoad(t, c.nsAddr, l)
	live := startConsumers(t, c.nsAddr)
	waitFor(t, 60*time.Second, "first acknowledgements", func() bool { return l.sdkCount() >= 200 })
	var windows []window
	for i, f := range schedule(rng, steps) {
		res.Faults[f.kind]++
		w, err := c.step(t, i, f, rng, l)
		if err != nil {
			// The run fails, but what was acknowledged is still checked.
			t.Errorf("%v", err)
			res.StepFailed = err.Error()
			break
		}
		windows = append(windows, w)
	}
	if err := c.heal(); err != nil {
		t.Errorf("healing everything: %v", err)
	}
	c.waitHealthy(90 * time.Second)
	ld.halt()
	acked, acks := l.snapshot()
	for _, w := range windows {
		res.UnavailMS[w.name] = longestGap(acks, w.from, w.to).Milliseconds()
	}
	res.Summarize()
	c.finalCheck(t, res, acked, live, run)
	res.Acked, res.SDKAcked = len(acked), l.sdkCount()
	res.Failed, res.SDKFailed = int(l.failed.Load()), int(l.sdkFailed.Load())
	res.DurationS = time.Since(began).Round(100 * time.Millisecond).Seconds()
	res.Time = time.Now().UTC().Format(time.RFC3339)
}

// window is one fault step's span, from injection to recovery.
type window struct {
	name     string
	from, to time.Time
}

// step injects one fault, holds it 1.5–3.5 s, heals it and waits until
// the group is whole and our SDK's sends are acknowledged again.
func (c *cluster) step(t *testing.T, i int, f fault, rng *rand.Rand, l *ledger) (window, error) {
	t.Helper()
	hold := time.Duration(1500+rng.IntN(2000)) * time.Millisecond
	w := window{name: fmt.Sprintf("%02d:%s", i, f.kind), from: time.Now()}
	restarts := c.restartCounts()
	heal, err := f.inject(c, rng, hold)
	if err != nil {
		c.logsSince(w.from)
		return w, fmt.Errorf("step %s: inject: %w", w.name, err)
	}
	time.Sleep(hold) // the fault's duration
	if err := heal(); err != nil {
		c.logsSince(w.from)
		return w, fmt.Errorf("step %s: heal: %w", w.name, err)
	}
	healed := time.Now()
	before := l.sdkCount()
	c.waitHealthy(90 * time.Second)
	waitFor(t, 60*time.Second, "acknowledgements after "+w.name, func() bool { return l.sdkCount() >= before+minAcksAfterHeal })
	w.to = time.Now()
	_, acks := l.snapshot()
	gap := longestGap(acks, w.from, w.to)
	t.Logf("step %s: held %v, recovered %v after healing; our SDK's longest gap %v", w.name, hold.Round(time.Millisecond),
		w.to.Sub(healed).Round(time.Millisecond), gap.Round(time.Millisecond))
	if gap > slowGap {
		c.logsSince(w.from)
	}
	for id, n := range c.restartCounts() {
		if n > restarts[id] {
			t.Logf("  %s exited and was restarted by Docker %d times", id, n-restarts[id])
		}
	}
	return w, nil
}

// restartCounts is restarts by node id.
func (c *cluster) restartCounts() map[string]int {
	out := map[string]int{}
	for _, n := range c.nodes {
		out[n.id] = c.restarts(n)
	}
	return out
}

// createTopic creates the orderly topic on the group.
func (c *cluster) createTopic() {
	c.t.Helper()
	waitFor(c.t, 30*time.Second, "topic "+topic, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.admin.CreateTopic(ctx, adminTopic())
		return err == nil
	})
}

// finalCheck reads everything back and fills the verdict into res.
func (c *cluster) finalCheck(t *testing.T, res *Result, acked map[string]bool, live map[string]*seen, run int) {
	t.Helper()
	// Delayed messages acknowledged last are stored in their queues a
	// second later: read back once the live consumers have had them (or
	// 30 s passed), not before.
	poll(30*time.Second, func() bool { return live["sdk"].missing(acked) == 0 && live["official"].missing(acked) == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all, err := readAll(ctx, c.admin, c.nsAddr, run)
	if err != nil {
		t.Fatalf("final read: %v", err)
	}
	v := check(acked, all)
	res.Lost, res.Dup, res.OrderViolations = v.lost, v.dup, v.order
	if v.lost > 0 {
		t.Logf("lost, first few: %v", v.firstLost)
	}
	if v.order > 0 {
		t.Logf("order violations, first few: %v", v.firstOrder)
	}
	// The live consumers get what they have not yet had, at least once.
	for name, s := range live {
		res.LiveMissing[name] = s.missing(acked)
	}
}

// verdictOf fails the run on any loss or order violation, and on
// duplicates at dupBound of the acknowledged sends or more.
func verdictOf(t *testing.T, r *Result) {
	if r.Lost > 0 {
		t.Errorf("%d acknowledged messages lost", r.Lost)
	}
	if r.OrderViolations > 0 {
		t.Errorf("%d per-key order violations", r.OrderViolations)
	}
	if r.Acked > 0 && float64(r.Dup) >= dupBound*float64(r.Acked) {
		t.Errorf("%d duplicates of %d acknowledged (≥ %.1f%%)", r.Dup, r.Acked, dupBound*100)
	}
	if r.Acked == 0 {
		t.Errorf("nothing acknowledged")
	}
}

// appendOut appends line to the file CHAOS_OUT names, if any.
func appendOut(t *testing.T, line string) {
	path := os.Getenv("CHAOS_OUT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Errorf("CHAOS_OUT: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Errorf("CHAOS_OUT: %v", err)
	}
}
