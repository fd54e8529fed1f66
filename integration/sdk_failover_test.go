package integration

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/message"
)

// TestSDKSurvivesLeaderKill9: our producer keeps sending while the leader's
// process is killed with SIGKILL. It follows the new leader at once: no
// send fails, no gap between acknowledgements exceeds 2 s, and our push
// consumer gets every acknowledged message.
// failoverSanityBound catches a failover that broke (a client stuck on a
// dead leader, a group that cannot elect), not a slow one: the target is
// under 2 s, and the failover time's distribution is measured, not
// asserted (docs/RELIABILITY.md: 0.47–0.89 s in ten runs here; with the
// former 500 ms raft timeouts one run in ten took 2.0 s, which a 2 s bound
// in CI turned into a flake).
const failoverSanityBound = 5 * time.Second

func TestSDKSurvivesLeaderKill9(t *testing.T) {
	c := startCluster(t)
	createTopicOn(t, c, "SdkKill", 4)
	p := newSDKProducer(t, c.nsAddr)

	var mu sync.Mutex
	acked := map[int]bool{}
	var failed atomic.Int64
	var lastAck atomic.Int64
	var maxGap atomic.Int64 // ns between consecutive acknowledgements
	var next atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	lastAck.Store(time.Now().UnixNano())
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				idx := int(next.Add(1) - 1)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := p.Send(ctx, sdkMessage("SdkKill", idx))
				cancel()
				if err != nil {
					failed.Add(1)
					t.Logf("send %d failed: %v", idx, err)
					continue
				}
				now := time.Now().UnixNano()
				if gap := now - lastAck.Swap(now); gap > maxGap.Load() {
					maxGap.Store(gap)
				}
				mu.Lock()
				acked[idx] = true
				mu.Unlock()
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor(t, 20*time.Second, func() bool { return count() >= 500 })
	maxGap.Store(0) // measure from here: start-up is not failover
	leader := c.waitLeader(5 * time.Second)
	c.kill(leader)
	t.Logf("killed leader n%d (SIGKILL)", leader+1)
	before := count()
	waitFor(t, 20*time.Second, func() bool { return count() >= before+1000 })
	close(stop)
	wg.Wait()

	gap := time.Duration(maxGap.Load())
	t.Logf("raftmq SDK: longest gap between acknowledgements across the kill: %v; %d sends failed", gap, failed.Load())
	if failed.Load() != 0 {
		t.Errorf("%d sends failed across the failover, want 0", failed.Load())
	}
	if gap > failoverSanityBound {
		t.Errorf("longest gap between acknowledgements %v, want < %v", gap, failoverSanityBound)
	}

	mu.Lock()
	want := make(map[int]bool, len(acked))
	for k := range acked {
		want[k] = true
	}
	mu.Unlock()
	col := &sdkCollector{got: map[int]*message.MessageExt{}}
	startSDKConsumer(t, c.nsAddr, "sdk-kill-group", "SdkKill", "kill", col.handle)
	waitFor(t, 60*time.Second, func() bool {
		col.mu.Lock()
		defer col.mu.Unlock()
		for k := range want {
			if col.got[k] == nil {
				return false
			}
		}
		return true
	})
	t.Logf("all %d acknowledged messages consumed", len(want))
}
