package dledger

// Offset stamping: the leader assigns each message its queue offset and
// its logical commit offset when it builds an entry, from counters loaded
// after a barrier in its term, and writes them (and the store time) into
// the stored record in place, so log order is offset order.

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/wallclock"
	"github.com/raftmq/raftmq/message"
)

// epoch is one leadership term's offset counters. They were loaded from
// applied state after a barrier in that term and are advanced at
// coalescing time.
type epoch struct {
	term       uint64
	queueNext  map[QueueKey]int64
	commitNext int64
	dead       atomic.Bool // a proposal of this epoch failed; counters unusable
	// voters are the voting followers and quorum the majority that early
	// answers count against (earlyack.go), read from raft's configuration
	// at members (earlyAcker.members); nil voters: no early answers.
	voters  map[raft.ServerAddress]bool
	quorum  int
	members uint64
	fetched bool
}

// refreshVoters reads the voter set when it was not read for the current
// membership count; while a change is under way (odd count) it has none.
func (ep *epoch) refreshVoters(n *Node, a *earlyAcker) {
	m := a.members.Load()
	if ep.fetched && ep.members == m {
		return
	}
	ep.fetched, ep.members, ep.voters = true, m, nil
	if m%2 == 1 {
		return
	}
	if v, q, ok := n.voterSet(); ok {
		ep.voters, ep.quorum = v, q
	}
}

// admits refuses a put pinned to another term (PutMessagesCommand.Term).
func (ep *epoch) admits(cmd Command) error {
	if c, ok := cmd.(*PutMessagesCommand); ok && c.Term != 0 && c.Term != ep.term {
		return fmt.Errorf("%w: pinned to term %d, leader is in term %d", ErrStaleProposal, c.Term, ep.term)
	}
	return nil
}

// epoch returns the counters of the current leadership term, running a
// barrier and loading them from applied state when the term is new.
func (p *proposer) epoch() (*epoch, error) {
	r := p.n.raft
	if r.State() != raft.Leader {
		return nil, p.n.notLeader()
	}
	term := r.CurrentTerm()
	p.mu.Lock()
	ep := p.ep
	p.mu.Unlock()
	if ep != nil && !ep.dead.Load() && ep.term == term {
		return ep, nil
	}
	p.open.Wait()
	start := time.Now()
	if err := r.Barrier(0).Error(); err != nil {
		return nil, p.mapErr(err)
	}
	q, c := p.n.fsm.st.snapshot()
	if r.CurrentTerm() != term || r.State() != raft.Leader {
		return nil, p.n.notLeader()
	}
	ep = &epoch{term: term, queueNext: q, commitNext: c}
	p.mu.Lock()
	p.ep = ep
	p.mu.Unlock()
	p.n.log.Info("leader ready", "term", term, "commit_offset", c, "queues", len(q), "barrier", time.Since(start))
	return ep, nil
}

// buildPut assigns offsets and stamps them into the records. Offsets are
// committed to ep only when the whole entry encodes, so a failed build
// leaves no hole.
func (ep *epoch) buildPut(batch []*proposal) ([]byte, error) {
	now := wallclock.UnixMilli()
	next := ep.commitNext
	queue := map[QueueKey]int64{}
	var msgs []AppliedMessage
	var recs, with [][]byte
	for _, pr := range batch {
		c := pr.cmd.(*PutMessagesCommand)
		with = append(with, pr.with...)
		pr.result.Messages = make([]MessageResult, len(c.Messages))
		for i := range c.Messages {
			m := &c.Messages[i]
			k := QueueKey{m.Topic, m.QueueID}
			qo, ok := queue[k]
			if !ok {
				qo = ep.queueNext[k]
			}
			ts := m.StoreTimestamp
			if ts == 0 {
				ts = now
			}
			if err := stamp(m.Record, qo, next, ts); err != nil {
				return nil, err
			}
			msgs = append(msgs, AppliedMessage{Topic: m.Topic, QueueID: m.QueueID, QueueOffset: qo, CommitOffset: next,
				Size: int32(len(m.Record)), TagsCode: m.TagsCode, StoreTimestamp: ts, Keys: m.Keys})
			recs = append(recs, m.Record)
			pr.result.Messages[i] = MessageResult{QueueOffset: qo, CommitOffset: next, StoreTimestamp: ts}
			queue[k] = qo + 1
			next += int64(len(m.Record))
		}
	}
	data, err := encodePut(ep.term, msgs, with, recs)
	if err != nil {
		return nil, err
	}
	for k, v := range queue {
		ep.queueNext[k] = v
	}
	ep.commitNext = next
	return data, nil
}

// stamp writes the leader-assigned fields into a stored message record.
func stamp(rec []byte, queueOffset, commitOffset, storeTs int64) error {
	if err := message.PatchQueueOffset(rec, queueOffset); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidCommand, err)
	}
	if err := message.PatchCommitLogOffset(rec, commitOffset); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidCommand, err)
	}
	if err := message.PatchStoreTimestamp(rec, storeTs); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidCommand, err)
	}
	return nil
}
