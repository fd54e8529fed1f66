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

// Members returns the group's voters.
func (n *Node) Members() ([]Peer, error) { return n.servers(raft.Voter) }

// Nonvoters returns the configuration's non-voting members: nodes AddVoter
// added that have not yet been promoted.
func (n *Node) Nonvoters() ([]Peer, error) { return n.servers(raft.Nonvoter) }

func (n *Node) servers(suffrage raft.ServerSuffrage) ([]Peer, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var out []Peer
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == suffrage {
			out = append(out, Peer{ID: string(s.ID), Addr: string(s.Address)})
		}
	}
	return out, nil
}

// AddVoter adds a voting member, in raft's safe order: a new node joins
// as a non-voter, is replicated to until it holds the leader's log, and
// only then is promoted, so an empty node never counts towards the quorum
// (adding it straight as a voter makes every write wait for its catch-up,
// and a group missing one more node stops). The new node must be started
// with empty Peers. AddVoter waits for the catch-up for at most half of
// ctx's remaining time, keeping the rest for the promotion; a node still
// behind then stays a non-voter and ErrCatchingUp says how far it is —
// calling AddVoter again promotes it once it has caught up. An existing
// voter is re-addressed. Leader only.
func (n *Node) AddVoter(ctx context.Context, id, addr string) error {
	if !n.IsLeader() {
		return n.notLeader()
	}
	cur, err := n.server(id)
	if err != nil {
		return err
	}
	if cur == nil || cur.Suffrage != raft.Voter {
		if err := n.addNonvoter(ctx, id, addr, cur); err != nil {
			return err
		}
		if err := n.waitCaughtUp(ctx, id, addr); err != nil {
			return err
		}
	}
	defer n.changingMembers()()
	f := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeoutOf(ctx))
	if err := waitFuture(ctx, f); err != nil {
		return fmt.Errorf("dledger: add voter %s: %w", id, n.prop.mapErr(err))
	}
	return n.membershipDurable(ctx, "add voter "+id, f.Index())
}

// changingMembers marks a change of the voter set under way until the
// returned function runs: entries are not answered early meanwhile, and
// the voter set is read again after it (earlyack.go).
func (n *Node) changingMembers() func() {
	if n.acker == nil {
		return func() {}
	}
	n.acker.members.Add(1)
	return func() { n.acker.members.Add(1) }
}

// server returns the configuration's entry for id, nil when it has none.
func (n *Node) server(id string) (*raft.Server, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id {
			return &s, nil
		}
	}
	return nil, nil
}

// addNonvoter makes id a non-voter at addr unless it already is one there.
func (n *Node) addNonvoter(ctx context.Context, id, addr string, cur *raft.Server) error {
	if cur != nil && string(cur.Address) == addr {
		return nil
	}
	f := n.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeoutOf(ctx))
	if err := waitFuture(ctx, f); err != nil {
		return fmt.Errorf("dledger: add %s as a non-voter: %w", id, n.prop.mapErr(err))
	}
	n.log.Info("added a non-voter; promoting it once it has caught up", "id", id, "addr", addr)
	return nil
}

// catchUpPoll is how often AddVoter looks at a new node's progress.
const catchUpPoll = 20 * time.Millisecond

// waitCaughtUp waits until the member at addr holds the log through the
// leader's last index as of now, for at most half of ctx's remaining time.
func (n *Node) waitCaughtUp(ctx context.Context, id, addr string) error {
	target := n.raft.LastIndex()
	wait := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d) / 2
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	tick := time.NewTicker(catchUpPoll)
	defer tick.Stop()
	for {
		ok, held := n.progress.caughtUp(raft.ServerAddress(addr), target)
		if ok {
			return nil
		}
		if !n.IsLeader() {
			return n.notLeader()
		}
		select {
		case <-tick.C:
		case <-t.C:
			return fmt.Errorf("%w: %s (a non-voter until then) holds the log through %d of %d; ask again to promote it",
				ErrCatchingUp, id, held, target)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// RemoveServer removes a member. Removing the leader itself makes it step
// down once the change is committed. Leader only.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if !n.IsLeader() {
		return n.notLeader()
	}
	defer n.changingMembers()()
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

// healthyTransferTarget is the follower a transfer without a target goes
// to: the most caught-up voter that answered within half the heartbeat
// timeout (raft heartbeats every tenth of it) and does not refuse entries
// (progressTransport.TransferTarget); false leaves the pick to raft.
func (n *Node) healthyTransferTarget() (raft.Server, bool) {
	if n.progress == nil {
		return raft.Server{}, false
	}
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return raft.Server{}, false
	}
	return n.progress.TransferTarget(cf.Configuration().Servers, raft.ServerID(n.cfg.NodeID), n.cfg.HeartbeatTimeout/2)
}

// TransferLeadership hands leadership to the member id, or to the most
// caught-up follower that answers and takes entries when id is empty
// (raft's own pick when none is known to). It waits for in-flight proposals
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
	if target == nil {
		if s, ok := n.healthyTransferTarget(); ok {
			target = &Peer{ID: string(s.ID), Addr: string(s.Address)}
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
