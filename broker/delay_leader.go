package broker

// Leader services: work only the leader does — delay-level schedulers,
// the timer scheduler — starts when this node becomes leader and stops
// when it stops being leader or its term changes. Queue locks are
// leader-local and dropped on the same transition. Each service starts
// from committed state after a barrier in its term (leaderBarrier), so a
// new leader resumes exactly where the last committed entry left off.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

const (
	// leaderPollInterval re-checks leadership in case an event was missed.
	leaderPollInterval = 500 * time.Millisecond
	// barrierTimeout bounds the barrier a service starts with.
	barrierTimeout = 5 * time.Second
	// serviceBackoff is the pause before a failed service restarts.
	serviceBackoff = 100 * time.Millisecond
)

// errNotLeaderTerm means leadership or its term changed under a service.
var errNotLeaderTerm = errors.New("broker: not leader in this term")

// leaderService is one piece of leader-only work; run returns when ctx
// ends or on an error, after which it is restarted from committed state.
type leaderService struct {
	name string
	run  func(ctx context.Context) error
}

func (b *Broker) leaderServices() []leaderService {
	return append(b.delay.services(), leaderService{"timer", b.timers.run})
}

// startLeaderServices runs the services while this node leads.
func (b *Broker) startLeaderServices() {
	b.goBackground(b.leaderLoop)
}

func (b *Broker) leaderLoop(stop <-chan struct{}) {
	events, unsubscribe := b.node.SubscribeLeader()
	defer unsubscribe()
	tick := time.NewTicker(leaderPollInterval)
	defer tick.Stop()
	var cur *leaderTerm
	defer func() { cur.stop(b) }()
	for {
		r := b.node.Raft()
		lead, term := r.State() == raft.Leader, r.CurrentTerm()
		if cur != nil && (!lead || term != cur.term) {
			cur.stop(b)
			cur = nil
		}
		if lead && cur == nil {
			cur = b.startTerm(term)
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

func (b *Broker) startTerm(term uint64) *leaderTerm {
	// A lock granted while leadership was being lost must not outlive it.
	b.locks.clear()
	ctx, cancel := context.WithCancel(context.Background())
	lt := &leaderTerm{term: term, cancel: cancel}
	for _, s := range b.leaderServices() {
		lt.wg.Add(1)
		go func() {
			defer lt.wg.Done()
			b.superviseService(ctx, s)
		}()
	}
	return lt
}

// stop ends the term's services and drops its leader-local locks.
func (lt *leaderTerm) stop(b *Broker) {
	if lt == nil {
		return
	}
	lt.cancel()
	lt.wg.Wait()
	b.locks.clear()
}

// superviseService restarts s after failures until ctx ends.
func (b *Broker) superviseService(ctx context.Context, s leaderService) {
	for ctx.Err() == nil {
		err := s.run(ctx)
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("leader service restarting from committed state", "service", s.name, "error", err)
		sleepCtx(ctx, serviceBackoff)
	}
}

// leaderBarrier waits until every entry of the log is applied here and
// returns the term it did so in; state read afterwards is committed state
// of that term's start plus this node's own later writes.
func (b *Broker) leaderBarrier(ctx context.Context) (uint64, error) {
	r := b.node.Raft()
	term := r.CurrentTerm()
	if r.State() != raft.Leader {
		return 0, errNotLeaderTerm
	}
	f := r.Barrier(barrierTimeout)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return 0, fmt.Errorf("broker: barrier: %w", err)
		}
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if r.State() != raft.Leader || r.CurrentTerm() != term {
		return 0, errNotLeaderTerm
	}
	return term, nil
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
