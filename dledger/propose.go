package dledger

// The proposal API: what a caller hands the leader and gets back. The
// leader's pipeline that turns proposals into entries is groupcommit.go;
// the offsets it assigns are stamp.go.

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/message"
)

// Result is what a committed proposal returns.
type Result struct {
	// Index is the raft index of the entry holding the proposal.
	Index uint64
	// Messages has, for a PutMessagesCommand, the assigned offsets of its
	// messages in order.
	Messages []MessageResult
	// applied closes once this node applied the entry; nil: it had.
	applied <-chan struct{}
}

// Applied is closed once this (leader) node has applied the entry: its
// messages are in the consumequeues and the key index. A put with
// PutMessagesCommand.EarlyAck may be answered a moment before.
func (r Result) Applied() <-chan struct{} {
	if r.applied == nil {
		return closedChan
	}
	return r.applied
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// MessageResult is where the leader put one message.
type MessageResult struct {
	QueueOffset    int64
	CommitOffset   int64
	StoreTimestamp int64
}

type proposal struct {
	ctx context.Context
	cmd Command
	// ctrl, when set, runs on the proposer goroutine with nothing in
	// flight (leadership transfer), instead of proposing cmd.
	ctrl func() error
	// with holds a put's side commands, encoded (encodeSide).
	with   [][]byte
	msgs   int
	bytes  int
	seq    uint64
	result Result
	done   chan error
}

// Propose replicates cmd through the group and returns once it is
// committed and applied on this (leader) node. On a follower it returns a
// *NotLeaderError. Concurrent calls are coalesced into one raft entry.
// If ctx ends after the proposal was handed to raft the outcome is unknown
// and ctx's error is returned.
func (n *Node) Propose(ctx context.Context, cmd Command) (Result, error) {
	pr, err := newProposal(ctx, cmd, n.cfg.MaxBatchBytes)
	if err != nil {
		return Result{}, err
	}
	if n.fsm.sm == nil && (len(pr.with) > 0 || cmd.Type() != CmdPutMessages) {
		return Result{}, fmt.Errorf("%w: %v needs a state machine (Config.StateMachine)", ErrInvalidCommand, cmd.Type())
	}
	if n.raft.State() != raft.Leader {
		return Result{}, n.notLeader()
	}
	pr.seq = n.prop.seq.Add(1)
	select {
	case n.prop.reqs <- pr:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-n.done:
		return Result{}, ErrClosed
	}
	select {
	case err := <-pr.done:
		return pr.result, err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-n.done:
		return Result{}, ErrClosed
	}
}

// runControl queues fn to run on the proposer goroutine.
func (n *Node) runControl(ctx context.Context, fn func() error) error {
	pr := &proposal{ctx: ctx, ctrl: fn, done: make(chan error, 1)}
	select {
	case n.prop.reqs <- pr:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrClosed
	}
	select {
	case err := <-pr.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newProposal checks cmd and sizes it: a bad command fails its caller
// alone, before it can share an entry with others.
func newProposal(ctx context.Context, cmd Command, maxBytes int) (*proposal, error) {
	pr := &proposal{ctx: ctx, cmd: cmd, done: make(chan error, 1)}
	switch c := cmd.(type) {
	case nil:
		return nil, fmt.Errorf("%w: nil command", ErrInvalidCommand)
	case *PutMessagesCommand:
		if err := checkMessages(c.Messages); err != nil {
			return nil, err
		}
		pr.msgs = len(c.Messages)
		for i := range c.Messages {
			pr.bytes += len(c.Messages[i].Record) + len(c.Messages[i].Topic) + 64
		}
		for _, w := range c.With {
			b, err := encodeSide(w)
			if err != nil {
				return nil, err
			}
			pr.with = append(pr.with, b)
			pr.bytes += len(b)
		}
	default:
		b, err := encodeCommand(cmd)
		if err != nil {
			return nil, err
		}
		pr.bytes = len(b)
		if bc, ok := cmd.(Batchable); ok {
			if pr.msgs = bc.Len(); pr.msgs <= 0 {
				return nil, fmt.Errorf("%w: empty %v", ErrInvalidCommand, cmd.Type())
			}
		}
	}
	if pr.bytes > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, pr.bytes, maxBytes)
	}
	return pr, nil
}

// checkMessages rejects what would corrupt the offset arithmetic: commit
// offsets advance by len(Record), so it must be the record's TOTALSIZE.
func checkMessages(msgs []Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("%w: no messages", ErrInvalidCommand)
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Topic == "" {
			return fmt.Errorf("%w: message %d has no topic", ErrInvalidCommand, i)
		}
		size, err := message.PeekTotalSize(m.Record)
		if err != nil || size != len(m.Record) {
			return fmt.Errorf("%w: message %d: record of %d bytes, TOTALSIZE %d: %v", ErrInvalidCommand, i, len(m.Record), size, err)
		}
	}
	return nil
}

func (p *proposer) mapErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		// Rejected before being appended: resending is safe.
		return p.n.notLeader()
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w: %w", ErrLeadershipLost, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	default:
		return err
	}
}
