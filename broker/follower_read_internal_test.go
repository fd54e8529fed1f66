package broker

import (
	"math"
	"runtime"
	"testing"
)

// TestRouteID: a follower names itself by the name server's numbering —
// the leader 0, the others sorted by address from 1 — and says 0 when it
// leads or knows no leader.
func TestRouteID(t *testing.T) {
	peers := []Peer{{ID: "n1", RemotingAddr: "127.0.0.1:30911"}, {ID: "n2", RemotingAddr: "127.0.0.1:10911"},
		{ID: "n3", RemotingAddr: "127.0.0.1:20911"}}
	for _, c := range []struct {
		self   int
		leader string
		want   int64
	}{
		{0, "n2", 2}, {2, "n2", 1}, // n3 (…:20911) sorts before n1 (…:30911)
		{1, "n1", 1}, {2, "n1", 2},
		{0, "n1", 0}, // the leader itself
		{1, "", 0},   // no leader known
		{1, "n9", 0}, // a leader this node does not know
	} {
		if got := routeID(peers, peers[c.self], c.leader); got != c.want {
			t.Errorf("%s with leader %q: id %d, want %d", peers[c.self].ID, c.leader, got, c.want)
		}
	}
}

// TestFollowerReadThreshold: the byte setting wins over the ratio; an
// unknown memory size never counts a consumer as far behind.
func TestFollowerReadThreshold(t *testing.T) {
	f := &followerReads{memory: 1000}
	if got := f.threshold(&settingValues{memRatio: 40}); got != 400 {
		t.Fatalf("40%% of 1000: %d", got)
	}
	if got := f.threshold(&settingValues{memRatio: 40, memBytes: 7}); got != 7 {
		t.Fatalf("bytes set: %d", got)
	}
	f.memory = 0
	if got := f.threshold(&settingValues{memRatio: 40}); got != math.MaxInt64 {
		t.Fatalf("memory unknown: %d", got)
	}
	m := physicalMemory()
	if m < 0 || (runtime.GOOS == "linux" && m == 0) {
		t.Fatalf("physicalMemory %d", m)
	}
	t.Logf("physical memory %d MiB (system %d MiB, cgroup limit %d MiB)", m>>20, systemMemory()>>20, cgroupMemoryLimit()>>20)
}
