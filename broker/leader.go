package broker

// Leader services: work only the leader does — delay-level schedulers,
// the timer scheduler — starts when this node becomes leader and stops
// when it stops being leader or its term changes. Queue locks are
// leader-local and dropped on the same transition. Each service starts
// from committed state after a barrier in its term (replica.barrier), so
// a new leader resumes exactly where the last committed entry left off.

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/dledger"
)

const (
	// leaderPollInterval re-checks leadership in case an event was missed.
	leaderPollInterval = 500 * time.Millisecond
	// serviceBackoff is the pause before a failed service restarts.
	serviceBackoff = 100 * time.Millisecond
)

// leaderService is one piece of leader-only work; run returns when ctx
// ends or on an error, after which it is restarted from committed state.
type leaderService struct {
	name string
	run  func(ctx context.Context) error
}

// leaderTerms runs the leader services while this node leads.
type leaderTerms struct {
	node     *dledger.Node
	services []leaderService
	// onChange runs when a term's services start or stop (dropping the
	// leader-local queue locks).
	onChange func()
	log      hclog.Logger
}

func (lt *leaderTerms) loop(stop <-chan struct{}) {
	events, unsubscribe := lt.node.SubscribeLeader()
	defer unsubscribe()
	tick := time.NewTicker(leaderPollInterval)
	defer tick.Stop()
	var cur *leaderTerm
	defer func() { lt.stopTerm(cur) }()
	for {
		r := lt.node.Raft()
		lead, term := r.State() == raft.Leader, r.CurrentTerm()
		if cur != nil && (!lead || term != cur.term) {
			lt.stopTerm(cur)
			cur = nil
		}
		if lead && cur == nil {
			cur = lt.startTerm(term)
		}
		select {
		case <-stop:
			return
		case <-events:
		case <-tick.C:
		}
	}
}

// leaderTerm is the leader services of one term.
type leaderTerm struct {
	term   uint64
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (lt *leaderTerms) startTerm(term uint64) *leaderTerm {
	// A lock granted while leadership was being lost must not outlive it.
	lt.onChange()
	ctx, cancel := context.WithCancel(context.Background())
	t := &leaderTerm{term: term, cancel: cancel}
	for _, s := range lt.services {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			lt.supervise(ctx, s)
		}()
	}
	return t
}

// stopTerm ends a term's services and drops its leader-local state.
func (lt *leaderTerms) stopTerm(t *leaderTerm) {
	if t == nil {
		return
	}
	t.cancel()
	t.wg.Wait()
	lt.onChange()
}

// supervise restarts s after failures until ctx ends.
func (lt *leaderTerms) supervise(ctx context.Context, s leaderService) {
	for ctx.Err() == nil {
		err := s.run(ctx)
		if ctx.Err() != nil {
			return
		}
		lt.log.Warn("leader service restarting from committed state", "service", s.name, "error", err)
		sleepCtx(ctx, serviceBackoff)
	}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
