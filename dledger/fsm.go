package dledger

import (
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Dispatcher receives the messages of applied put entries, in log order,
// on every replica (the dispatch of RocketMQ's store: consumequeue and
// index).
type Dispatcher interface {
	// Dispatch stores msgs, the messages of the put entry at raft index
	// index, whose offsets the FSM has checked. Restarts replay entries
	// the dispatcher may already hold: an equal message must be a no-op,
	// a different one an error, after which the FSM stops the node as
	// diverged. What is only best effort (the key index) must not fail.
	Dispatch(index uint64, msgs []AppliedMessage) error
	// Restored is called after a snapshot was installed, with the next
	// queue offset of every queue in it. The dispatcher may hold entries
	// at or above them (they will be replayed identically); a queue
	// holding fewer must restart empty at from[k] when from has the
	// queue, else at next[k]. A non-nil from means the log holds the
	// history below the snapshot (imported with it): its messages are
	// dispatched next, from those offsets up to next.
	Restored(next, from map[QueueKey]int64) error
}

// StateMachine is the replicated state besides the messages: the broker
// group's metadata. The FSM calls it on its goroutine, in log order.
type StateMachine interface {
	// Apply applies the state-machine command of type t (its encoding as
	// Command.AppendBody wrote it) committed at raft index index. An error
	// means the command cannot be decoded or applied the same way on every
	// replica: the node stops as diverged.
	Apply(index uint64, t CommandType, body []byte) error
	// Snapshot returns the state's encoding. It must be deterministic:
	// replicas at the same applied index return equal bytes.
	Snapshot() ([]byte, error)
	// Restore replaces the state with what Snapshot returned.
	Restore(data []byte) error
}

// Syncer is implemented by a Dispatcher or StateMachine that buffers
// writes. It is synced before every snapshot is persisted: once the
// snapshot is on disk raft never replays the entries it covers, so what
// was derived from them must be durable first, or a power loss would leave
// the consumequeue behind the snapshot.
type Syncer interface {
	Sync() error
}

// fsm applies committed entries to the counters, the dispatcher and the
// state machine.
// behindDiscarder is a log store that can drop a log left entirely behind
// a restored snapshot (commitlog.Log.DiscardIfBehind).
type behindDiscarder interface {
	DiscardIfBehind(index uint64) (bool, error)
}

type fsm struct {
	st       *counters
	logs     raft.LogStore // the node's log, for DiscardIfBehind
	dispatch Dispatcher
	sm       StateMachine
	log      hclog.Logger
	// onFatal stops the node; called at most once, never on the FSM
	// goroutine's stack synchronously (raft.Shutdown waits for that goroutine).
	onFatal func(error)

	// durable, when set, returns once this node's copy of an index is on
	// disk (leaderwrite.go); every command waits for it before it applies.
	durable func(index uint64) error

	failOnce sync.Once
	failed   error // set once, read only on the FSM goroutine
}

var _ raft.FSM = (*fsm)(nil)

// Apply implements raft.FSM. The response is nil or an error.
func (f *fsm) Apply(l *raft.Log) any {
	if f.failed != nil {
		return f.failed
	}
	if l.Type != raft.LogCommand {
		return nil
	}
	if f.durable != nil {
		if err := f.durable(l.Index); err != nil {
			return f.fail(fmt.Errorf("dledger: entry %d is not durable on this node: %w", l.Index, err))
		}
	}
	v, err := decodeEntry(l.Data)
	if err != nil {
		return f.fail(fmt.Errorf("%w: entry %d: %w", ErrDivergence, l.Index, err))
	}
	if p, ok := v.(*putEntry); ok {
		return f.applyPut(l, p)
	}
	if err := f.applyCommand(l.Index, v.(rawCommand)); err != nil {
		return f.fail(err)
	}
	f.st.setApplied(l.Index)
	return nil
}

func (f *fsm) applyCommand(index uint64, c rawCommand) error {
	if f.sm == nil {
		return fmt.Errorf("%w: entry %d: %v with no state machine", ErrDivergence, index, c.typ)
	}
	if err := f.sm.Apply(index, c.typ, c.body); err != nil {
		return fmt.Errorf("%w: entry %d: %v: %w", ErrDivergence, index, c.typ, err)
	}
	return nil
}

func (f *fsm) applyPut(l *raft.Log, p *putEntry) any {
	if p.Term != l.Term {
		// Proposed with counters of another term: every replica rejects it
		// the same way, so state stays identical and nothing was stored.
		f.log.Warn("rejected stale put", "index", l.Index, "entry_term", l.Term, "proposal_term", p.Term)
		f.st.setApplied(l.Index)
		return ErrStaleProposal
	}
	if err := f.checkAndAdvance(l.Index, p); err != nil {
		return f.fail(err)
	}
	if f.dispatch != nil {
		if err := f.dispatch.Dispatch(l.Index, p.Messages); err != nil {
			return f.fail(fmt.Errorf("%w: entry %d: dispatch: %w", ErrDivergence, l.Index, err))
		}
	}
	for _, c := range p.With {
		if err := f.applyCommand(l.Index, c); err != nil {
			return f.fail(err)
		}
	}
	// Applied once its messages are in the queues and index too, so a
	// reader that waited for AppliedIndex finds them there.
	f.st.setApplied(l.Index)
	return nil
}

// checkAndAdvance verifies the leader-assigned offsets against the applied
// counters and advances them. Within one term the leader derived its
// counters from this very state after a barrier, so any difference means
// the replicas no longer agree.
func (f *fsm) checkAndAdvance(index uint64, p *putEntry) error {
	s := f.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.FirstCommitOffset != s.commitNext && len(p.Messages) > 0 {
		return fmt.Errorf("%w: entry %d starts at commit offset %d, applied state expects %d", ErrDivergence, index, p.FirstCommitOffset, s.commitNext)
	}
	next := s.commitNext
	seen := map[QueueKey]int64{}
	for i := range p.Messages {
		m := &p.Messages[i]
		k := QueueKey{m.Topic, m.QueueID}
		want, ok := seen[k]
		if !ok {
			want = s.queueNext[k]
		}
		if m.QueueOffset != want || m.CommitOffset != next {
			return fmt.Errorf("%w: entry %d message %d (%s/%d): offsets q=%d c=%d, applied state expects q=%d c=%d",
				ErrDivergence, index, i, m.Topic, m.QueueID, m.QueueOffset, m.CommitOffset, want, next)
		}
		seen[k] = want + 1
		next += int64(m.Size)
	}
	for k, v := range seen {
		s.queueNext[k] = v
	}
	s.commitNext = next
	return nil
}

// fail latches err, stops the node, and returns err as the response.
func (f *fsm) fail(err error) error {
	f.failOnce.Do(func() {
		f.failed = err
		f.log.Error("STOPPING NODE: replica diverged or cannot apply the log", "error", err)
		if f.onFatal != nil {
			go f.onFatal(err)
		}
	})
	return f.failed
}

// Snapshot implements raft.FSM. raft calls it on the FSM goroutine, so the
// captured state is exactly what was applied, and the dispatcher holds at
// least those entries when Persist syncs it.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if f.failed != nil {
		return nil, f.failed
	}
	var sm []byte
	if f.sm != nil {
		var err error
		if sm, err = f.sm.Snapshot(); err != nil {
			return nil, fmt.Errorf("dledger: state machine snapshot: %w", err)
		}
	}
	return &fsmSnapshot{data: encodeSnapshot(f.st, sm), syncSinks: f.syncSinks}, nil
}

// syncSinks makes what was derived from the log durable (Syncer);
// fsmSnapshot.Persist calls it before the snapshot is written.
func (f *fsm) syncSinks() error {
	for _, sink := range []any{f.dispatch, f.sm} {
		if s, ok := sink.(Syncer); ok {
			if err := s.Sync(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Restore implements raft.FSM. A snapshot that carries history (see
// history.go) is imported into a log it left empty, and the consumequeues
// the install resets are rebuilt from it.
func (f *fsm) Restore(r io.ReadCloser) error {
	defer r.Close()
	snap, err := readSnapshot(r)
	if err != nil {
		return err
	}
	ns, sm, err := decodeSnapshot(snap.meta)
	if err != nil {
		return err
	}
	if d, ok := f.logs.(behindDiscarder); ok {
		if _, err := d.DiscardIfBehind(ns.applied); err != nil {
			return fmt.Errorf("dledger: discarding the log behind the snapshot: %w", err)
		}
	}
	from, err := f.importHistory(snap, ns.applied)
	if err != nil {
		return err
	}
	if f.dispatch != nil {
		if err := f.dispatch.Restored(ns.copyQueues(), from); err != nil {
			return fmt.Errorf("dledger: dispatcher restore: %w", err)
		}
		if from != nil {
			if err := f.deriveHistory(ns.applied); err != nil {
				return err
			}
		}
	}
	if f.sm != nil {
		if err := f.sm.Restore(sm); err != nil {
			return fmt.Errorf("dledger: state machine restore: %w", err)
		}
	}
	s := f.st
	s.mu.Lock()
	s.queueNext, s.commitNext, s.applied = ns.queueNext, ns.commitNext, ns.applied
	s.mu.Unlock()
	f.log.Info("restored snapshot", "applied_index", ns.applied, "queues", len(ns.queueNext), "commit_offset", ns.commitNext)
	return nil
}

// SpanFunc is the commitlog.SpanFunc for entries written by this package:
// for a put entry it returns the commit offset of its first message and
// the position of the concatenated message records within l.Data.
// Commit offsets of the entries it reports never decrease in index order.
func SpanFunc(l *raft.Log) (firstCommitOffset int64, msgStart, msgLen int, ok bool) {
	if l.Type != raft.LogCommand {
		return 0, 0, 0, false
	}
	term, first, start, n, ok := peekPut(l.Data)
	// A stale put (see ErrStaleProposal) is applied as a no-op and its
	// commit offsets may repeat later ones, so it holds no messages.
	if !ok || n == 0 || term != l.Term {
		return 0, 0, 0, false
	}
	return first, start, n, true
}
