package dledger

import (
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// progressTransport records, on the leader, how far each follower is
// known to hold the log, from the answers to raft's own replication
// calls: hashicorp/raft keeps its match indexes private. AddVoter uses it
// to promote a new node only once it has caught up.
type progressTransport struct {
	raft.Transport
	mu sync.Mutex
	// match is the highest index a successful AppendEntries or
	// InstallSnapshot to the address covered.
	match map[raft.ServerAddress]uint64
	// piped counts the address's open pipelines: raft opens one only after
	// a synchronous AppendEntries brought the follower up to the leader's
	// last index, and closes it when replication falls back to catch-up.
	piped map[raft.ServerAddress]int
}

// progressPreVoteTransport adds pre-vote when the wrapped transport has it.
type progressPreVoteTransport struct {
	*progressTransport
	raft.WithPreVote
}

func newProgressTransport(t raft.Transport) (raft.Transport, *progressTransport) {
	p := &progressTransport{Transport: t, match: map[raft.ServerAddress]uint64{}, piped: map[raft.ServerAddress]int{}}
	if pv, ok := t.(raft.WithPreVote); ok {
		return progressPreVoteTransport{p, pv}, p
	}
	return p, p
}

// caughtUp reports whether the follower at addr holds the log through
// index, or is being replicated to in pipeline mode (raft's own sign that
// it has caught up), and how far it is known to hold it.
func (t *progressTransport) caughtUp(addr raft.ServerAddress, index uint64) (bool, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.match[addr]
	return m >= index || t.piped[addr] > 0, m
}

func (t *progressTransport) advance(addr raft.ServerAddress, index uint64) {
	t.mu.Lock()
	if index > t.match[addr] {
		t.match[addr] = index
	}
	t.mu.Unlock()
}

// AppendEntries implements raft.Transport.
func (t *progressTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := t.Transport.AppendEntries(id, target, req, resp)
	if err == nil && resp.Success && len(req.Entries) > 0 {
		t.advance(target, req.Entries[len(req.Entries)-1].Index)
	}
	return err
}

// InstallSnapshot implements raft.Transport.
func (t *progressTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	err := t.Transport.InstallSnapshot(id, target, args, resp, data)
	if err == nil && resp.Success {
		t.advance(target, args.LastLogIndex)
	}
	return err
}

// AppendEntriesPipeline implements raft.Transport.
func (t *progressTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.piped[target]++
	t.mu.Unlock()
	return &progressPipeline{AppendPipeline: p, t: t, target: target}, nil
}

// Close implements raft.WithClose when the wrapped transport does.
func (t *progressTransport) Close() error {
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

type progressPipeline struct {
	raft.AppendPipeline
	t      *progressTransport
	target raft.ServerAddress
	once   sync.Once
}

// Close implements raft.AppendPipeline.
func (p *progressPipeline) Close() error {
	p.once.Do(func() {
		p.t.mu.Lock()
		p.t.piped[p.target]--
		p.t.mu.Unlock()
	})
	return p.AppendPipeline.Close()
}
