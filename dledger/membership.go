package dledger

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// timeoutOf turns ctx's deadline into raft's enqueue timeout (0 = none).
func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		if t := time.Until(d); t > 0 {
			return t
		}
		return time.Millisecond
	}
	return 0
}

// waitFuture waits for f or ctx, whichever ends first.
func waitFuture(ctx context.Context, f raft.Future) error {
	ch := make(chan error, 1)
	go func() { ch <- f.Error() }()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Members returns the group's current configuration.
func (n *Node) Members() ([]Peer, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var out []Peer
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			out = append(out, Peer{ID: string(s.ID), Addr: string(s.Address)})
		}
	}
	return out, nil
}

// AddVoter adds (or re-addresses) a voting member. The new node must be
// started with empty Peers; it catches up by snapshot and log before it
// counts towards the quorum. Leader only.
func (n *Node) AddVoter(ctx context.Context, id, addr string) error {
	if !n.IsLeader() {
		return n.notLeader()
	}
	f := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeoutOf(ctx))
	if err := waitFuture(ctx, f); err != nil {
		return fmt.Errorf("dledger: add voter %s: %w", id, n.prop.mapErr(err))
	}
	return n.membershipDurable(ctx, "add voter "+id, f.Index())
}

// RemoveServer removes a member. Removing the leader itself makes it step
// down once the change is committed. Leader only.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if !n.IsLeader() {
		return n.notLeader()
	}
	f := n.raft.RemoveServer(raft.ServerID(id), 0, timeoutOf(ctx))
	if err := waitFuture(ctx, f); err != nil {
		return fmt.Errorf("dledger: remove server %s: %w", id, n.prop.mapErr(err))
	}
	return n.membershipDurable(ctx, "remove server "+id, f.Index())
}

// membershipDurable returns once this node's copy of the configuration
// entry at index is on disk. raft answers a membership change when it
// counts the entry committed, which — the leader writing its copy in
// parallel (leaderwrite.go) — may count the leader before its fsync: a
// change answered then could be undone by a power loss of the leader and
// one follower.
func (n *Node) membershipDurable(ctx context.Context, what string, index uint64) error {
	if n.durableLog == nil {
		return nil
	}
	if err := n.durableLog.WaitDurable(ctx, index); err != nil {
		return fmt.Errorf("dledger: %s: committed at %d, not yet durable on this node: %w", what, index, err)
	}
	return nil
}

// TransferLeadership hands leadership to the member id, or to the most
// caught-up follower when id is empty. It waits for in-flight proposals
// first and holds new ones back until the transfer ends. Leader only.
func (n *Node) TransferLeadership(ctx context.Context, id string) error {
	if !n.IsLeader() {
		return n.notLeader()
	}
	var target *Peer
	if id != "" {
		members, err := n.Members()
		if err != nil {
			return err
		}
		for i := range members {
			if members[i].ID == id {
				target = &members[i]
			}
		}
		if target == nil {
			return fmt.Errorf("%w: %q", ErrUnknownServer, id)
		}
	}
	return n.runControl(ctx, func() error {
		var f raft.Future
		if target == nil {
			f = n.raft.LeadershipTransfer()
		} else {
			f = n.raft.LeadershipTransferToServer(raft.ServerID(target.ID), raft.ServerAddress(target.Addr))
		}
		if err := f.Error(); err != nil {
			return fmt.Errorf("dledger: transfer leadership: %w", err)
		}
		return nil
	})
}
