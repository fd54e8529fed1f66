package commitlog

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/vfs"
)

// setFSM records the distinct uint64 commands it applied, so a command
// retried after a leader change is applied once.
type setFSM struct {
	mu   sync.Mutex
	seen map[uint64]bool
}

func (f *setFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen[binary.LittleEndian.Uint64(l.Data)] = true
	return nil
}

func (f *setFSM) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

func (f *setFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b []byte
	for v := range f.seen {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return setSnapshot(b), nil
}

func (f *setFSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = map[uint64]bool{}
	for ; len(b) >= 8; b = b[8:] {
		f.seen[binary.LittleEndian.Uint64(b)] = true
	}
	return nil
}

type setSnapshot []byte

func (s setSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (setSnapshot) Release() {}

type raftNode struct {
	id    raft.ServerID
	raft  *raft.Raft
	fsm   *setFSM
	log   *Log
	cfg   Config
	trans *raft.InmemTransport
	snaps raft.SnapshotStore
}

func raftConfig(id raft.ServerID) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = id
	c.HeartbeatTimeout, c.ElectionTimeout = 50*time.Millisecond, 50*time.Millisecond
	c.LeaderLeaseTimeout, c.CommitTimeout = 50*time.Millisecond, 5*time.Millisecond
	c.SnapshotThreshold, c.SnapshotInterval = 1<<30, time.Hour // snapshots only on demand
	c.TrailingLogs = 10
	c.Logger = hclog.NewNullLogger()
	return c
}

// TestRaftClusterOnCommitlog runs three raft nodes on the commitlog: they
// replicate, a lagging follower is brought back by a snapshot after the
// leader's retention removed the entries it lacks (so raft deletes the
// follower's whole log and stores from the snapshot index on), and the
// logs survive a restart.
func TestRaftClusterOnCommitlog(t *testing.T) {
	var nodes []*raftNode
	var servers []raft.Server
	for i := 1; i <= 3; i++ {
		id := raft.ServerID(fmt.Sprintf("n%d", i))
		addr, trans := raft.NewInmemTransport(raft.ServerAddress(id))
		cfg := testConfig(vfs.NewMem(), testDir)
		cfg.Retention.DiskUsage = func(string) (float64, error) { return 0.86, nil } // force deletes
		n := &raftNode{id: id, fsm: &setFSM{seen: map[uint64]bool{}}, trans: trans, snaps: raft.NewInmemSnapshotStore()}
		n.log, n.cfg = mustOpen(t, cfg), cfg
		nodes = append(nodes, n)
		servers = append(servers, raft.Server{ID: id, Address: addr})
	}
	for _, a := range nodes {
		for _, b := range nodes {
			a.trans.Connect(b.trans.LocalAddr(), b.trans)
		}
	}
	stable := []*raft.InmemStore{raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemStore()}
	for i, n := range nodes {
		c := raftConfig(n.id)
		if err := raft.BootstrapCluster(c, n.log, stable[i], n.snaps, n.trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(c, n.fsm, n.log, stable[i], n.snaps, n.trans)
		if err != nil {
			t.Fatal(err)
		}
		n.raft = r
	}
	defer func() {
		for _, n := range nodes {
			if n.raft != nil {
				_ = n.raft.Shutdown().Error()
			}
			_ = n.log.Close()
		}
	}()

	leader := waitLeader(t, nodes)
	apply := func(from, to uint64) {
		for v := from; v <= to; v++ {
			for try := 0; ; try++ {
				err := leader.raft.Apply(binary.LittleEndian.AppendUint64(nil, v), time.Second).Error()
				if err == nil {
					break
				}
				if try == 20 {
					t.Fatalf("Apply(%d): %v", v, err)
				}
				leader = waitLeader(t, nodes) // an election under -race; the FSM dedups the retry
			}
		}
	}
	apply(1, 100)
	waitApplied(t, nodes, 100)

	// Cut off one follower, move on, snapshot, and let retention drop the
	// leader's old segments up to the snapshot.
	var lagging *raftNode
	for _, n := range nodes {
		if n != leader {
			lagging = n
			break
		}
	}
	for _, n := range nodes {
		n.trans.Disconnect(lagging.trans.LocalAddr())
		lagging.trans.Disconnect(n.trans.LocalAddr())
	}
	apply(101, 300)
	if err := leader.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	snapIndex := leader.raft.LastIndex() - 1
	leader.log.SetRetentionFloor(func() uint64 { return snapIndex })
	for {
		n, err := leader.log.RunRetentionOnce(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	lagLast, _ := lagging.log.LastIndex()
	if first, _ := leader.log.FirstIndex(); first <= lagLast+1 {
		t.Fatalf("leader first index %d; retention must remove what the follower lacks (last %d)", first, lagLast)
	}
	for _, n := range nodes {
		n.trans.Connect(lagging.trans.LocalAddr(), lagging.trans)
		lagging.trans.Connect(n.trans.LocalAddr(), n.trans)
	}
	apply(301, 320)
	waitApplied(t, nodes, 320)
	first, _ := lagging.log.FirstIndex()
	if first <= lagLast {
		t.Fatalf("follower first index %d after snapshot install; want its old log (to %d) deleted", first, lagLast)
	}
	t.Logf("follower log was [1, %d]; leader first %d after retention; follower first %d after install",
		lagLast, mustFirst(leader.log), first)
	checkSameLogs(t, leader.log, lagging.log, first)

	// The follower's log, started at the snapshot index, survives a restart.
	if err := lagging.raft.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	lagging.raft = nil
	closeLog(t, lagging.log)
	lagging.log = mustOpen(t, lagging.cfg)
	checkSameLogs(t, leader.log, lagging.log, first)
	if got, _ := lagging.log.FirstIndex(); got != first {
		t.Fatalf("first index after restart = %d, want %d", got, first)
	}
}

func mustFirst(l *Log) uint64 { first, _ := l.FirstIndex(); return first }

func waitLeader(t *testing.T, nodes []*raftNode) *raftNode {
	t.Helper()
	var leader *raftNode
	waitFor(t, func() bool {
		for _, n := range nodes {
			if n.raft.State() == raft.Leader {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

func waitApplied(t *testing.T, nodes []*raftNode, count int) {
	t.Helper()
	waitFor(t, func() bool {
		for _, n := range nodes {
			if n.fsm.count() != count {
				return false
			}
		}
		return true
	})
}

// checkSameLogs compares two nodes' entries from first to the end.
func checkSameLogs(t *testing.T, a, b *Log, first uint64) {
	t.Helper()
	lastA, _ := a.LastIndex()
	lastB, _ := b.LastIndex()
	if lastA != lastB {
		t.Fatalf("last index %d vs %d", lastA, lastB)
	}
	for i := first; i <= lastA; i++ {
		var la, lb raft.Log
		if err := a.GetLog(i, &la); err != nil {
			t.Fatalf("leader GetLog(%d): %v", i, err)
		}
		if err := b.GetLog(i, &lb); err != nil {
			t.Fatalf("follower GetLog(%d): %v", i, err)
		}
		if err := sameLog(&la, &lb); err != nil {
			t.Fatalf("index %d: %v", i, err)
		}
	}
}
