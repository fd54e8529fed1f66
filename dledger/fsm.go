package dledger

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/consumequeue"
)

// QueueEntry is one consumequeue entry: where a message is in the
// commitlog (logical commit offset and size) and its tag hash.
type QueueEntry = consumequeue.Entry

// QueueSink receives the consumequeue entries of applied messages, in log
// order, on every replica (the dispatch of RocketMQ's store).
type QueueSink interface {
	// Append stores es at the consecutive queue offsets from first: the
	// messages of one entry for one queue, so a sink can write them at
	// once. Restarts replay entries the sink may already hold: an equal
	// entry must be a no-op, a different one an error (the FSM then stops
	// the node as diverged).
	Append(q QueueKey, first int64, es []QueueEntry) error
	// Restored is called after a snapshot was installed, with the next
	// queue offset of every queue in it. The sink may hold entries at or
	// above them (they will be replayed identically) and must accept
	// appends at them even if it holds fewer (the messages before a
	// snapshot a lagging node installs are not in its commitlog).
	Restored(next map[QueueKey]int64) error
}

// IndexSink receives the keys of applied messages. Index failures are
// logged and do not stop the node: the index is rebuildable and RocketMQ
// treats it as best effort.
type IndexSink interface {
	Put(key string, commitOffset, storeTimestamp int64) error
}

// fsm applies committed entries to the metadata state and the sinks.
type fsm struct {
	st     *state
	queues QueueSink
	index  IndexSink
	log    hclog.Logger
	// onFatal stops the node; called at most once, never on the FSM
	// goroutine's stack synchronously (raft.Shutdown waits for that goroutine).
	onFatal func(error)

	// durable, when set, returns once this node's copy of an index is on
	// disk (leaderwrite.go); every command waits for it before it applies.
	durable func(index uint64) error

	failOnce sync.Once
	failed   error // set once, read only on the FSM goroutine
	runs     queueRuns
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
	f.st.mu.Lock()
	f.st.applyMeta(v.(Command))
	f.st.applied = l.Index
	f.st.mu.Unlock()
	return nil
}

func (f *fsm) applyPut(l *raft.Log, p *putEntry) any {
	if p.Term != l.Term {
		// Proposed with counters of another term: every replica rejects it
		// the same way, so state stays identical and nothing was stored.
		f.log.Warn("rejected stale put", "index", l.Index, "entry_term", l.Term, "proposal_term", p.Term)
		f.st.mu.Lock()
		f.st.applied = l.Index
		f.st.mu.Unlock()
		return ErrStaleProposal
	}
	if err := f.checkAndAdvance(l.Index, p); err != nil {
		return f.fail(err)
	}
	if f.queues != nil {
		for _, r := range f.runs.group(p.Messages) {
			if err := f.queues.Append(r.key, r.first, r.entries); err != nil {
				return f.fail(fmt.Errorf("%w: entry %d: consumequeue %s/%d@%d+%d: %w", ErrDivergence, l.Index, r.key.Topic, r.key.QueueID, r.first, len(r.entries), err))
			}
		}
	}
	if f.index != nil {
		for i := range p.Messages {
			m := &p.Messages[i]
			for _, key := range m.Keys {
				if err := f.index.Put(key, m.CommitOffset, m.StoreTimestamp); err != nil {
					f.log.Warn("index put failed", "key", key, "commit_offset", m.CommitOffset, "error", err)
				}
			}
		}
	}
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
	for _, d := range p.Delay {
		s.delay[d.QueueID] = d.Offset
	}
	s.commitNext = next
	s.applied = index
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

// Syncer is implemented by sinks that buffer writes. They are synced
// before every snapshot is persisted: once the snapshot is on disk raft never replays
// the entries it covers, so what the sinks hold of them must be durable
// first, or a power loss would leave the consumequeue behind the snapshot.
type Syncer interface {
	Sync() error
}

// Snapshot implements raft.FSM. raft calls it on the FSM goroutine, so the
// captured state is exactly what was applied, and the sinks hold at least
// those entries when Persist syncs them.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if f.failed != nil {
		return nil, f.failed
	}
	return &fsmSnapshot{data: f.st.encodeSnapshot(), syncSinks: f.syncSinks}, nil
}

// syncSinks makes the sinks durable (Syncer); fsmSnapshot.Persist calls
// it before the snapshot is written.
func (f *fsm) syncSinks() error {
	for _, sink := range []any{f.queues, f.index} {
		if s, ok := sink.(Syncer); ok {
			if err := s.Sync(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Restore implements raft.FSM.
func (f *fsm) Restore(r io.ReadCloser) error {
	defer r.Close()
	ns, err := readSnapshot(r)
	if err != nil {
		return err
	}
	if f.queues != nil {
		q, _ := ns.counters()
		if err := f.queues.Restored(q); err != nil {
			return errors.Join(fmt.Errorf("dledger: consumequeue restore: %w", err))
		}
	}
	s := f.st
	s.mu.Lock()
	s.topics, s.groups, s.offsets = ns.topics, ns.groups, ns.offsets
	s.queueNext, s.commitNext, s.delay, s.applied = ns.queueNext, ns.commitNext, ns.delay, ns.applied
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
