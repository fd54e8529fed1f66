package dledger

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// RecoveringLog is a raft.LogStore that can lose entries it had stored
// and acknowledged: the commitlog, whose recovery cuts a corrupt record
// out of the middle of the log (a flipped bit, a torn page). While
// RecoveringThrough is non-zero the log no longer holds everything up to
// that index that it had acknowledged to a leader.
type RecoveringLog interface {
	RecoveringThrough() uint64
}

// SpaceRefusingLog is a raft.LogStore that refuses writes while its disk
// is full (the commitlog): SpaceRefusal says why, nil while it takes them.
type SpaceRefusingLog interface {
	SpaceRefusal() error
}

// errRecovering answers the vote requests of a node that recovers.
var errRecovering = errors.New("dledger: node recovering a corrupt log: it neither votes nor stands for election")

// errNoSpace stops a node whose log refuses writes for lack of space from
// standing for election: as leader it could not store a single entry.
var errNoSpace = errors.New("dledger: log refuses writes (disk full): not standing for election")

// voteGuard keeps a node whose log lost acknowledged entries out of
// elections until its log is back: incoming RequestVote, RequestPreVote
// and TimeoutNow are refused, and its own vote requests are not sent.
// hashicorp/raft has no such switch, so it sits in the transport.
//
// Why this is needed, and why it is enough. Raft's safety rests on one
// intersection: an entry is committed once a majority stored it, a leader
// is elected by a majority, so some voter is in both — and that voter
// grants its vote only to a candidate whose log is at least as up to date
// as its own, so the winner holds the entry. A voter that lost entries it
// had acknowledged (its log was cut at a corrupt record below its last
// index) breaks that link: it still counts in the majority that committed
// an entry, but its log no longer shows it, so it would vote for a
// candidate missing the entry, and, standing itself, could win and
// overwrite the entry on the others. This is how NATS lost acknowledged
// writes after one bit flip on a minority.
//
// A recovering node is therefore treated as if it had no vote: it grants
// none (so every majority of granted votes consists of nodes whose logs
// still hold what they acknowledged, and the intersection argument holds
// among them), it asks for none (its own vote for itself is such a vote),
// and TimeoutNow (a leadership transfer, which skips the pre-vote) is
// refused. It still accepts AppendEntries and InstallSnapshot, through
// which it catches up. It returns to elections once the commitlog has
// stored, durably, entries up to X, the last index it held before the cut
// (RecoveringThrough drops to 0): every entry it could have acknowledged
// has an index <= X, and by then its log up to X is the log of a leader
// elected without its vote, which by the argument above holds every
// committed entry; an entry <= X that the leader does not hold was never
// committed and cannot become so. The marker is durable, so a restart
// during recovery keeps the node abstaining.
//
// The cost is availability, never safety: a group of three with one
// recovering node elects only while both others are up. If a majority
// recovers at once nothing can be elected until an operator restores one
// of them from a peer; corruption on a majority is outside the fault model.
//
// The guard also keeps a node whose log refuses writes for lack of space
// (full) from standing for election, for liveness only: it still votes,
// but sends no vote requests and refuses TimeoutNow. Elected, it would
// fail to store its first entry, step down, and — its log being the
// longest — win the next election again, and the one after, until its
// disk had room (a group of three stalled 2.6 s so in a container run).
type voteGuard struct {
	raft.Transport
	recovering func() bool
	full       func() bool
	fullWarned atomic.Bool
	log        hclog.Logger
	id, addr   []byte

	ch        chan raft.RPC
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	warned    bool // owned by the pump goroutine
}

// voteGuardPreVote adds pre-vote when the wrapped transport has it (raft
// finds it by type assertion).
type voteGuardPreVote struct {
	*voteGuard
	pv raft.WithPreVote
}

// newVoteGuard wraps t and starts the goroutine that filters its
// consumer; Close or stopPump stops it.
func newVoteGuard(t raft.Transport, recovering, full func() bool, id string, log hclog.Logger) (raft.Transport, *voteGuard) {
	g := &voteGuard{
		Transport: t, recovering: recovering, full: full, log: log,
		id: []byte(id), addr: []byte(t.LocalAddr()),
		ch: make(chan raft.RPC), stop: make(chan struct{}),
	}
	g.wg.Add(1)
	go g.pump()
	if pv, ok := t.(raft.WithPreVote); ok {
		return voteGuardPreVote{g, pv}, g
	}
	return g, g
}

// Consumer implements raft.Transport: the wrapped consumer's RPCs minus
// the refused ones.
func (g *voteGuard) Consumer() <-chan raft.RPC { return g.ch }

func (g *voteGuard) pump() {
	defer g.wg.Done()
	in := g.Transport.Consumer()
	for {
		select {
		case <-g.stop:
			return
		case rpc := <-in:
			if g.refuse(rpc) {
				continue
			}
			select {
			case g.ch <- rpc:
			case <-g.stop:
				return // unanswered, as by a raft that shut down: the sender times out
			}
		}
	}
}

// refuse answers rpc itself when it is a vote or transfer request and the
// node recovers.
func (g *voteGuard) refuse(rpc raft.RPC) bool {
	var resp any
	switch req := rpc.Command.(type) {
	case *raft.RequestVoteRequest:
		resp = &raft.RequestVoteResponse{RPCHeader: g.header(), Term: req.Term}
	case *raft.RequestPreVoteRequest:
		resp = &raft.RequestPreVoteResponse{RPCHeader: g.header(), Term: req.Term}
	case *raft.TimeoutNowRequest:
		resp = &raft.TimeoutNowResponse{RPCHeader: g.header()}
	default:
		return false
	}
	if _, ok := resp.(*raft.TimeoutNowResponse); ok && !g.recovering() {
		if err := g.campaignRefusal(); err != nil {
			rpc.Respond(resp, err)
			return true
		}
		return false
	}
	if !g.recovering() {
		return false
	}
	if !g.warned {
		g.warned = true
		g.log.Warn("refusing votes and leadership while the log recovers from corruption")
	}
	var err error
	if _, ok := resp.(*raft.TimeoutNowResponse); ok {
		err = errRecovering
	}
	rpc.Respond(resp, err)
	return true
}

func (g *voteGuard) header() raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: g.id, Addr: g.addr}
}

// campaignRefusal says why this node must not stand for election now
// (recovering, or a log refusing writes for space), nil when it may.
func (g *voteGuard) campaignRefusal() error {
	if g.recovering() {
		return errRecovering
	}
	if g.full() {
		if !g.fullWarned.Swap(true) {
			g.log.Warn("not standing for election while the log refuses writes for lack of space")
		}
		return errNoSpace
	}
	g.fullWarned.Store(false)
	return nil
}

// RequestVote implements raft.Transport: not sent while this node must not
// stand for election.
func (g *voteGuard) RequestVote(id raft.ServerID, target raft.ServerAddress, req *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if err := g.campaignRefusal(); err != nil {
		return err
	}
	return g.Transport.RequestVote(id, target, req, resp)
}

// RequestPreVote implements raft.WithPreVote: not sent while this node
// must not stand for election.
func (g voteGuardPreVote) RequestPreVote(id raft.ServerID, target raft.ServerAddress, req *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if err := g.campaignRefusal(); err != nil {
		return err
	}
	return g.pv.RequestPreVote(id, target, req, resp)
}

// Close implements raft.WithClose (raft closes its transport on
// Shutdown): the guard's goroutine stops and the wrapped transport is
// closed when it can be.
func (g *voteGuard) Close() error {
	g.stopPump()
	return closeTransport(g.Transport)
}

// stopPump stops the guard's goroutine; idempotent.
func (g *voteGuard) stopPump() error {
	g.closeOnce.Do(func() { close(g.stop) })
	g.wg.Wait()
	return nil
}
