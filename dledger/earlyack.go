package dledger

// Early answers: a put is answered as soon as its entry is on disk on a
// majority, not when raft's FSM goroutine gets to it.
//
// hashicorp/raft answers an Apply only after its leader loop has counted
// the followers' answers, handed the entry to the FSM goroutine and the
// FSM has applied it (here: the consumequeue and index writes) — 0.15–0.5
// ms of a 2–4 ms sync round in BenchmarkReplication. Yet the entry is
// committed, for good, the moment it is stored on a majority of voters in
// the term it was appended in (Raft §5.4.2): every later leader holds it.
// So the leader watches its own replication answers (netTransport's
// onAppended) and answers the proposals of an entry once
//
//   - enough voting followers answered success, in the entry's term, for
//     requests that carried the entry, that with the leader's own durable
//     copy (commitlog WaitDurable) they are a majority — or the followers
//     alone are one;
//   - the entry was built in that term (so the FSM's term check passes on
//     every replica: it is applied exactly as proposed), and holds only
//     messages (no state-machine side commands, whose outcome only the
//     FSM knows);
//   - no membership change started since the proposal (the voter set it
//     was counted against is still raft's).
//
// Anything else — an entry replicated from a copy re-read from the log
// rather than the proposer's buffer, a follower's failure, a lost
// leadership — falls back to raft's own answer, which still comes. What an
// early answer does not wait for is this node's FSM: the message is
// readable (pulls, the key index, dedupe lookups) a moment later;
// Result.Applied says when.
//
// Entries are recognized by their data: raft keeps the buffer the
// proposer handed to Apply in its log cache and replicates from it, so the
// first byte's address names the proposal.

import (
	"context"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/hashicorp/raft"
)

// earlyAcker tracks the leader's early-answerable entries.
type earlyAcker struct {
	n       *Node
	mu      sync.Mutex
	byData  map[*byte]*tracked
	pending chan *tracked // in proposal order, for run
	// members counts membership changes started: an entry tracked under
	// another count is not answered early.
	members atomic.Uint64
	done    chan struct{}
}

// tracked is one entry waiting for its early answer.
type tracked struct {
	inf     *inflight
	term    uint64
	members uint64
	voters  map[raft.ServerAddress]bool // voting followers
	quorum  int                         // of all voters, the leader included

	// guarded by earlyAcker.mu
	index uint64
	acked map[raft.ServerAddress]bool

	half chan struct{} // closed at quorum-1 follower acks
	full chan struct{} // closed at quorum follower acks
	// settled is closed once raft answered the entry (waitLoop).
	settled chan struct{}
}

func newEarlyAcker(n *Node) *earlyAcker {
	a := &earlyAcker{n: n, byData: map[*byte]*tracked{}, pending: make(chan *tracked, 4*n.cfg.MaxInflight+16),
		done: make(chan struct{})}
	n.wg.Add(1)
	go a.run()
	return a
}

// voterSet is the voting followers of raft's latest configuration and the
// quorum, or ok false when this node is not one of its voters.
func (n *Node) voterSet() (followers map[raft.ServerAddress]bool, quorum int, ok bool) {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil, 0, false
	}
	followers = map[raft.ServerAddress]bool{}
	voters, self := 0, false
	for _, s := range f.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID == raft.ServerID(n.cfg.NodeID) {
			self = true
		} else {
			followers[s.Address] = true
		}
	}
	return followers, voters/2 + 1, self
}

// track registers inf, whose entry data is data, built in ep. It returns
// nil when the entry cannot be answered early.
func (a *earlyAcker) track(ep *epoch, data []byte, inf *inflight) *tracked {
	if ep.voters == nil || len(data) == 0 || ep.members != a.members.Load() {
		return nil
	}
	for _, pr := range inf.batch {
		c, ok := pr.cmd.(*PutMessagesCommand)
		if !ok || !c.EarlyAck || len(pr.with) > 0 {
			return nil
		}
	}
	t := &tracked{inf: inf, term: ep.term, members: ep.members, voters: ep.voters, quorum: ep.quorum,
		acked: map[raft.ServerAddress]bool{}, half: make(chan struct{}), full: make(chan struct{}),
		settled: make(chan struct{})}
	if t.quorum-1 <= 0 {
		close(t.half)
	}
	a.mu.Lock()
	a.byData[unsafe.SliceData(data)] = t
	a.mu.Unlock()
	select {
	case a.pending <- t:
	default: // run is behind: raft's answer will do
		a.forget(data)
		return nil
	}
	return t
}

// forget drops the entry of data from the table.
func (a *earlyAcker) forget(data []byte) {
	a.mu.Lock()
	delete(a.byData, unsafe.SliceData(data))
	a.mu.Unlock()
}

// onAppended takes a follower's answer to an AppendEntries (the
// transport's hook).
func (a *earlyAcker) onAppended(target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) {
	if !resp.Success || resp.Term != req.Term || len(req.Entries) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.byData) == 0 {
		return
	}
	for _, e := range req.Entries {
		if len(e.Data) == 0 {
			continue
		}
		t := a.byData[unsafe.SliceData(e.Data)]
		if t == nil || e.Term != t.term || !t.voters[target] || t.acked[target] {
			continue
		}
		t.index = e.Index
		t.acked[target] = true
		switch len(t.acked) {
		case t.quorum - 1:
			close(t.half)
		case t.quorum:
			close(t.full)
		}
	}
}

// run answers tracked entries in proposal order.
func (a *earlyAcker) run() {
	defer a.n.wg.Done()
	for {
		select {
		case t := <-a.pending:
			a.settle(t)
		case <-a.done:
			return
		}
	}
}

// settle answers t early when it becomes durable on a majority before raft
// answers it.
func (a *earlyAcker) settle(t *tracked) {
	select {
	case <-t.half:
	case <-t.settled:
		return
	case <-a.done:
		return
	}
	a.mu.Lock()
	index := t.index
	a.mu.Unlock()
	// With the leader's copy on disk the followers that answered make a
	// majority; the followers alone may make one first.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-t.full:
		case <-t.settled:
		case <-a.done:
		}
		cancel()
	}()
	err := a.n.durableLog.WaitDurable(ctx, index)
	cancel()
	majority := err == nil
	if !majority {
		select {
		case <-t.full:
			majority = true
		default:
		}
	}
	if majority && a.members.Load() == t.members {
		t.inf.answer(nil, index)
	}
}

// settled is raft's answer to t's entry: it is no longer tracked.
func (a *earlyAcker) settled(t *tracked, data []byte) {
	a.forget(data)
	close(t.settled)
}

// close stops run.
func (a *earlyAcker) close() { close(a.done) }
