package dledger_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/dledger/dledgertest"
	"github.com/raftmq/raftmq/internal/vfs"
)

// syncGate holds the fsyncs of commitlog segments while closed.
type syncGate struct {
	mu   sync.Mutex
	held bool
	open chan struct{}
}

func (g *syncGate) hold() {
	g.mu.Lock()
	g.held, g.open = true, make(chan struct{})
	g.mu.Unlock()
}

func (g *syncGate) release() {
	g.mu.Lock()
	if g.held {
		g.held = false
		close(g.open)
	}
	g.mu.Unlock()
}

func (g *syncGate) MaybeFail(op vfs.Op, name string, n int) (int, error) {
	if op != vfs.OpSync || !strings.HasSuffix(name, ".log") {
		return n, nil
	}
	g.mu.Lock()
	held, open := g.held, g.open
	g.mu.Unlock()
	if held {
		<-open
	}
	return n, nil
}

// gatedCluster is a group whose nodes' commitlog fsyncs each pass a
// syncGate of their own.
func gatedCluster(t *testing.T) (*dledgertest.Cluster, []*syncGate) {
	gates := make([]*syncGate, 3)
	c := dledgertest.New(t, dledgertest.Options{Configure: fastConfig, ConfigureLog: func(i int, cc *commitlog.Config) {
		gates[i] = &syncGate{}
		ffs := vfs.NewFaultFS(vfs.OS)
		ffs.Inject(gates[i])
		cc.FS = ffs
	}})
	return c, gates
}

// TestLeaderWriteInParallel: the leader does not fsync an entry before
// replicating it, yet a proposal is answered, and followers apply it, only
// once the leader's own copy is on disk as well.
func TestLeaderWriteInParallel(t *testing.T) {
	c, gates := gatedCluster(t)
	leader := c.WaitLeader(5 * time.Second)
	n := c.Node(leader)
	propose := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec := record(t, "t", 0, []byte("x"))
		_, err := n.Propose(ctx, &dledger.PutMessagesCommand{Messages: []dledger.Message{{Topic: "t", QueueID: 0, Record: rec}}})
		return err
	}
	if err := propose(); err != nil { // the term's barrier, and queue t/0 known everywhere
		t.Fatal(err)
	}
	c.WaitConverged(5 * time.Second)
	before, _ := c.Member(leader).Log.LastIndex()

	gates[leader].hold()
	defer gates[leader].release()
	done := make(chan error, 1)
	go func() { done <- propose() }()

	// The followers store and acknowledge the entry while the leader's
	// fsync of it is held: the leader replicated before its own sync.
	followers := []int{}
	for i := range 3 {
		if i != leader {
			followers = append(followers, i)
		}
	}
	c.Eventually(5*time.Second, func() error {
		for _, f := range followers {
			if last, _ := c.Member(f).Log.LastIndex(); last <= before {
				return fmt.Errorf("n%d has not stored the entry (last %d)", f, last)
			}
		}
		return nil
	})
	// For a while (many commit-propagation intervals) nothing may happen:
	// the proposal is unanswered and no follower applies the entry.
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("proposal answered (%v) before the leader's copy was durable", err)
		case <-time.After(10 * time.Millisecond):
		}
		for _, f := range followers {
			if _, es := c.Member(f).Sink.Entries(dledger.QueueKey{Topic: "t", QueueID: 0}); len(es) != 1 {
				t.Fatalf("n%d applied %d entries of t/0 before the leader's copy was durable, want 1", f, len(es))
			}
		}
	}

	gates[leader].release()
	if err := <-done; err != nil {
		t.Fatalf("proposal after the leader's sync: %v", err)
	}
	c.Eventually(5*time.Second, func() error {
		for _, f := range followers {
			if _, es := c.Member(f).Sink.Entries(dledger.QueueKey{Topic: "t", QueueID: 0}); len(es) != 2 {
				return fmt.Errorf("n%d holds %d entries of t/0, want 2", f, len(es))
			}
		}
		return nil
	})
}

// TestMembershipChangeAnsweredOnlyWhenDurable: a membership change is
// answered once the leader's own copy of the configuration entry is on
// disk, not when raft counts it committed (which, with the leader's write
// in parallel, may include the leader before its fsync). Held here: the
// leader's fsyncs, while a follower is removed (the new configuration's
// majority is the leader and the other follower).
func TestMembershipChangeAnsweredOnlyWhenDurable(t *testing.T) {
	c, gates := gatedCluster(t)
	leader := c.WaitLeader(5 * time.Second)
	n := c.Node(leader)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := record(t, "t", 0, []byte("x"))
	if _, err := n.Propose(ctx, &dledger.PutMessagesCommand{Messages: []dledger.Message{{Topic: "t", QueueID: 0, Record: rec}}}); err != nil {
		t.Fatal(err)
	}
	c.WaitConverged(5 * time.Second)
	victim := (leader + 1) % 3
	before, _ := c.Member(leader).Log.LastIndex()

	gates[leader].hold()
	defer gates[leader].release()
	done := make(chan error, 1)
	go func() { done <- n.RemoveServer(ctx, c.Member(victim).ID) }()
	other := (leader + 2) % 3
	c.Eventually(5*time.Second, func() error {
		if last, _ := c.Member(other).Log.LastIndex(); last <= before {
			return fmt.Errorf("n%d has not stored the configuration entry (last %d)", other, last)
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("membership change answered (%v) before the leader's copy was durable", err)
	case <-time.After(500 * time.Millisecond):
	}
	gates[leader].release()
	if err := <-done; err != nil {
		t.Fatalf("membership change after the leader's sync: %v", err)
	}
	members, err := n.Members()
	if err != nil || len(members) != 2 {
		t.Fatalf("members %v, %v; want 2", members, err)
	}
}
