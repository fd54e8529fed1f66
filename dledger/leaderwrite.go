package dledger

import (
	"context"

	"github.com/hashicorp/raft"
)

// DeferredSyncLog is a raft.LogStore that can return from StoreLogs before
// the batch's fsync and make it durable in the background (the
// commitlog). With one, the leader writes its own copy of an entry in
// parallel with replicating it.
type DeferredSyncLog interface {
	// SetDeferSync installs the function StoreLogs asks whether it may
	// defer this batch's fsync.
	SetDeferSync(func() bool)
	// DurableIndex is the last index on disk.
	DurableIndex() uint64
	// WaitDurable returns once DurableIndex reaches index, or the log
	// failed or closed.
	WaitDurable(ctx context.Context, index uint64) error
}

// FlooredLog is a raft.LogStore with its own retention (the commitlog
// deletes old segments, raft's head deletion is a no-op): it is told the
// highest index it may delete, the last snapshot's, so raft can always
// replay from its snapshot.
type FlooredLog interface {
	SetRetentionFloor(func() uint64)
}

// The leader writes its own copy of an entry in parallel with replicating
// it (the Raft thesis, §10.2.1). hashicorp/raft stores an entry on the
// leader and only then sends it to the followers, so a round costs two
// fsyncs in series. Here the leader's StoreLogs writes and returns at once
// (DeferredSyncLog) and the log's syncer fsyncs in the background. raft then counts the leader before its copy is durable, so
// its commit index alone no longer means "on disk on a majority". Two
// things make nothing depend on it before that is true:
//
//   - the FSM applies an entry only once this node's copy is durable
//     (fsm.durable), so a proposal is answered, a message becomes
//     readable and a snapshot covers an entry only when the leader and at
//     least one follower have fsynced it;
//   - followers learn a commit index no higher than the leader's durable
//     index (clampTransport), so they never apply an entry that a crash
//     of the leader's machine could still take away.
//
// An entry raft counted committed but that is on one disk only is then no
// different from an uncommitted one: nobody has seen it.

// deferLeaderSync is the log's DeferSync: true while this node is the
// raft leader. raft calls StoreLogs as leader only from dispatchLogs,
// and switches to follower before it stores what a new leader sends.
func (n *Node) deferLeaderSync() bool {
	r := n.raftRef.Load()
	return r != nil && r.State() == raft.Leader
}

// waitDurable blocks the FSM until this node's copy of index is on disk.
func (n *Node) waitDurable(index uint64) error {
	return n.durableLog.WaitDurable(context.Background(), index)
}

// clampTransport caps the commit index the leader sends to followers at
// the leader's durable index.
type clampTransport struct {
	raft.Transport
	durable func() uint64
}

// clampPreVoteTransport adds pre-vote when the wrapped transport has it:
// raft looks for it by type assertion.
type clampPreVoteTransport struct {
	*clampTransport
	raft.WithPreVote
}

func newClampTransport(t raft.Transport, durable func() uint64) raft.Transport {
	ct := &clampTransport{Transport: t, durable: durable}
	if pv, ok := t.(raft.WithPreVote); ok {
		return clampPreVoteTransport{ct, pv}
	}
	return ct
}

func (t *clampTransport) clamp(req *raft.AppendEntriesRequest) {
	if d := t.durable(); req.LeaderCommitIndex > d {
		req.LeaderCommitIndex = d
	}
}

// AppendEntries implements raft.Transport.
func (t *clampTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	t.clamp(req)
	return t.Transport.AppendEntries(id, target, req, resp)
}

// AppendEntriesPipeline implements raft.Transport.
func (t *clampTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return clampPipeline{AppendPipeline: p, t: t}, nil
}

// Close implements raft.WithClose when the wrapped transport does.
func (t *clampTransport) Close() error { return closeTransport(t.Transport) }

type clampPipeline struct {
	raft.AppendPipeline
	t *clampTransport
}

// AppendEntries implements raft.AppendPipeline.
func (p clampPipeline) AppendEntries(req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	p.t.clamp(req)
	return p.AppendPipeline.AppendEntries(req, resp)
}
