package dledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/dledger/dledgertest"
)

// TestChaos runs a fixed-seed schedule of kills, power losses (of one
// node, or now and then of every node at once), restarts, partitions,
// heals, leadership transfers and bit flips or torn pages in one node's
// commitlog at a time under load, then heals everything and
// asserts that every acknowledged message is on every node and that all
// raft logs are identical. With RAFTMQ_CHAOS=1 (make chaos) it runs
// RAFTMQ_CHAOS_RUNS (default 200) runs of RAFTMQ_CHAOS_STEPS (default 30)
// steps on fresh seeds, each appending a JSON line to RAFTMQ_CHAOS_OUT
// when set; RAFTMQ_CHAOS_SEED replays one.
func TestChaos(t *testing.T) {
	runs, steps, seed := 1, 14, int64(13)
	if os.Getenv("RAFTMQ_CHAOS") != "" {
		runs, steps, seed = envInt(t, "RAFTMQ_CHAOS_RUNS", 200), envInt(t, "RAFTMQ_CHAOS_STEPS", 30), time.Now().UnixNano()
		if v := os.Getenv("RAFTMQ_CHAOS_SEED"); v != "" {
			runs, seed = 1, int64(envInt(t, "RAFTMQ_CHAOS_SEED", 0))
		}
	}
	for r := range runs {
		s := seed + int64(r)
		t.Run(fmt.Sprintf("run%d-seed%d", r, s), func(t *testing.T) { chaosRun(t, s, steps) })
	}
}

// envInt reads a whole number from the environment, def when unset.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: want a whole number", name, v)
	}
	return n
}

// chaosResult is one run's JSON line.
type chaosResult struct {
	Seed   int64          `json:"seed"`
	Steps  int            `json:"steps"`
	Faults map[string]int `json:"faults"`
	Acked  int            `json:"acked"`
	Passed bool           `json:"passed"`
	Time   string         `json:"time"`
}

func chaosRun(t *testing.T, seed int64, steps int) {
	t.Logf("chaos: %d steps, seed %d (replay: RAFTMQ_CHAOS=1 RAFTMQ_CHAOS_SEED=%d RAFTMQ_CHAOS_STEPS=%d)", steps, seed, seed, steps)
	res := chaosResult{Seed: seed, Steps: steps, Faults: map[string]int{}}
	defer func() {
		res.Passed, res.Time = !t.Failed(), time.Now().UTC().Format(time.RFC3339)
		appendChaosLine(t, res)
	}()
	rng := rand.New(rand.NewSource(seed))
	c := dledgertest.New(t, dledgertest.Options{Configure: fastConfig, MemFS: true})
	c.WaitLeader(5 * time.Second)
	p, stop := background(t, c, 6)
	damaged := -1
	for s := 0; s < steps; s++ {
		res.Faults[chaosStep(t, c, rng, s, &damaged)]++
		time.Sleep(time.Duration(100+rng.Intn(500)) * time.Millisecond) // pacing of the schedule, not a wait for a condition
	}
	c.Heal()
	for i := 0; i < c.Len(); i++ {
		if c.Node(i) == nil {
			c.Restart(i)
		}
	}
	c.WaitLeader(10 * time.Second)
	before := len(p.acks())
	c.Eventually(10*time.Second, func() error {
		if len(p.acks()) <= before {
			return context.DeadlineExceeded
		}
		return nil
	})
	stop()
	c.WaitConverged(20 * time.Second)
	acks := p.acks()
	res.Acked = len(acks)
	t.Logf("chaos: %d acknowledged messages", len(acks))
	checkAcked(t, c, acks)
	checkQueuesIdentical(t, c)
	checkLogsIdentical(t, c)
}

// appendChaosLine appends res to $RAFTMQ_CHAOS_OUT when it is set.
func appendChaosLine(t *testing.T, res chaosResult) {
	path := os.Getenv("RAFTMQ_CHAOS_OUT")
	if path == "" {
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Error(err)
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Error(err)
	}
}

// chaosStep takes one step of the schedule and returns its kind.
func chaosStep(t *testing.T, c *dledgertest.Cluster, rng *rand.Rand, s int, damaged *int) string {
	i := rng.Intn(c.Len())
	switch rng.Intn(8) {
	case 0:
		t.Logf("chaos %d: kill n%d", s, i)
		c.Kill(i)
		return "kill"
	case 1:
		if c.Node(i) == nil {
			t.Logf("chaos %d: restart n%d", s, i)
			c.Restart(i)
			return "restart"
		}
		return "none"
	case 2:
		t.Logf("chaos %d: partition n%d", s, i)
		c.Partition(i)
		return "partition"
	case 3:
		t.Logf("chaos %d: heal", s)
		c.Heal()
		return "heal"
	case 4:
		for _, j := range c.Live() {
			if n := c.Node(j); n != nil && n.IsLeader() {
				t.Logf("chaos %d: transfer from n%d", s, j)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = n.TransferLeadership(ctx, "") // may fail if no follower is reachable
				cancel()
			}
		}
		return "transfer"
	case 5:
		t.Logf("chaos %d: power loss on n%d", s, i)
		c.LosePower(i)
		return "power-loss-one"
	case 6:
		if rng.Intn(3) == 0 {
			t.Logf("chaos %d: power loss on every node, then all restart", s)
			c.LosePower(0, 1, 2)
			for j := 0; j < c.Len(); j++ {
				c.Restart(j)
			}
			return "power-loss-all"
		}
		return "none"
	default:
		if chaosDamage(t, c, rng, s, i, damaged) {
			return "damage"
		}
		return "none"
	}
}

// chaosDamage flips a bit or tears a page of node i's commitlog (stopped
// by a kill or a power loss, restarted after), only while no other node
// is damaged: corruption is injected on a minority only. A node stays
// damaged until its commitlog is no longer recovering.
func chaosDamage(t *testing.T, c *dledgertest.Cluster, rng *rand.Rand, s, i int, damaged *int) bool {
	if d := *damaged; d >= 0 {
		if n, m := c.Node(d), c.Member(d); n == nil || m.Log == nil || m.Log.RecoveringThrough() != 0 {
			return false
		}
		*damaged = -1
	}
	if rng.Intn(2) == 0 {
		c.Kill(i)
	} else {
		c.LosePower(i)
	}
	if rng.Intn(2) == 0 {
		t.Logf("chaos %d: bit flip in entry %d of n%d", s, c.FlipBit(i, rng, 1, 0), i)
	} else {
		file, off := c.TearPage(i, rng, dledgertest.Segment)
		t.Logf("chaos %d: torn page of n%d: %s at %d", s, i, file, off)
	}
	c.Restart(i)
	*damaged = i
	return true
}

// checkLogsIdentical compares every raft entry the live nodes have in
// common.
func checkLogsIdentical(t *testing.T, c *dledgertest.Cluster) {
	t.Helper()
	live := c.Live()
	var lo, hi uint64
	for k, i := range live {
		ls := c.Node(i).LogStore()
		f, _ := ls.FirstIndex()
		l, _ := ls.LastIndex()
		if k == 0 || f > lo {
			lo = f
		}
		if k == 0 {
			hi = l
		} else if l != hi {
			t.Fatalf("n%d last index %d, n%d %d", i, l, live[0], hi)
		}
	}
	for idx := lo; idx <= hi; idx++ {
		var ref raft.Log
		if err := c.Node(live[0]).LogStore().GetLog(idx, &ref); err != nil {
			t.Fatalf("n%d GetLog(%d): %v", live[0], idx, err)
		}
		for _, i := range live[1:] {
			var got raft.Log
			if err := c.Node(i).LogStore().GetLog(idx, &got); err != nil {
				t.Fatalf("n%d GetLog(%d): %v", i, idx, err)
			}
			if got.Term != ref.Term || got.Type != ref.Type || string(got.Data) != string(ref.Data) {
				t.Fatalf("entry %d differs between n%d and n%d", idx, live[0], i)
			}
		}
	}
	t.Logf("logs identical over [%d, %d]", lo, hi)
}
