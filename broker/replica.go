package broker

// A node's place in its broker group: whether it leads, and how a write
// reaches the leader. Every service that writes goes through it.
//
// Forwarding: a follower (or a node that lost leadership mid-request)
// sends the client's request on to the leader and returns the leader's
// answer under the client's opaque, so a client with a stale route —
// every RocketMQ client for up to 30 s after a failover — still succeeds.
// A request is forwarded at most once: one that arrives forwarded at a
// non-leader is answered SERVICE_NOT_AVAILABLE, and the client retries.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/remoting"
)

// extForwarded marks a request forwarded by a follower (raftmq extension).
const extForwarded = "raftmqForwarded"

// barrierTimeout bounds the barrier a leader service starts with.
const barrierTimeout = 5 * time.Second

// errNotLeaderTerm means leadership or its term changed under a service.
var errNotLeaderTerm = errors.New("broker: not leader in this term")

// replica is this node of a broker group.
type replica struct {
	node           *dledger.Node
	self           Peer
	peers          []Peer
	group          string // the group's BrokerName
	client         *remoting.Client
	forwardTimeout time.Duration
	// noSpace says why this node's log refuses writes for lack of space
	// (commitlog SpaceRefusal: usage ratio, MinFreeBytes or a real
	// ENOSPC), nil while it takes them; a nil noSpace: never.
	noSpace func() error
	// sign signs a request forwarded to the leader (the ACL's peer
	// account); nil: unsigned.
	sign func(*remoting.Command)

	termMu    sync.Mutex    // serializes the barriers of ready
	readyTerm atomic.Uint64 // the term this node ran a barrier in as leader
}

func (r *replica) isLeader() bool { return r.node.IsLeader() }

// propose runs cmd through the group; it is the one way processors write.
func (r *replica) propose(ctx context.Context, cmd dledger.Command) (dledger.Result, error) {
	if r.noSpace != nil {
		if err := r.noSpace(); err != nil {
			// raft would try, fail to store it and step down; refuse first.
			return dledger.Result{}, fmt.Errorf("broker: propose %T on %s: %w", cmd, r.self.ID, err)
		}
	}
	res, err := r.node.Propose(ctx, cmd)
	if err != nil {
		return res, fmt.Errorf("broker: propose %T: %w", cmd, err)
	}
	return res, nil
}

// remotingAddrOf is the client-facing address of peer id, "" if unknown.
func (r *replica) remotingAddrOf(id string) string {
	for _, p := range r.peers {
		if p.ID == id {
			return p.RemotingAddr
		}
	}
	return ""
}

// leaderRemotingAddr is the leader's client-facing address, "" when no
// leader is known or this node leads.
func (r *replica) leaderRemotingAddr() string {
	_, id := r.node.Leader()
	if id == "" || id == r.self.ID {
		return ""
	}
	return r.remotingAddrOf(id)
}

// forward sends req to the leader and returns the leader's response
// addressed to req. It waits for the leader it forwarded to even if
// leadership moves meanwhile: the request may be the one moving it (a
// leadership transfer), or one that must not run twice.
func (r *replica) forward(ctx context.Context, req *remoting.Command) *remoting.Command {
	return r.forwarding(ctx, req, false)
}

// forwardSend forwards a send like forward, except that when this node
// sees leadership move while it waits (it forwarded to a leader that has
// just been paused, cut off or killed), it forwards again to the new
// leader at once instead of waiting out the old one — the client's
// attempt would time out first — or returns nil when it is the new leader
// itself: the caller then stores the send. A send stored by the old leader
// as well is answered from the dedupe window.
func (r *replica) forwardSend(ctx context.Context, req *remoting.Command) *remoting.Command {
	return r.forwarding(ctx, req, true)
}

func (r *replica) forwarding(ctx context.Context, req *remoting.Command, follow bool) *remoting.Command {
	if req.ExtFields[extForwarded] != "" {
		return errResponse(req, remoting.ResServiceNotAvailable,
			"broker %s is not the leader of %s (request already forwarded once)", r.self.ID, r.group)
	}
	fwd := req.Clone()
	fwd.Flag &^= remoting.FlagOneway
	if fwd.ExtFields == nil {
		fwd.ExtFields = map[string]string{}
	}
	fwd.ExtFields[extForwarded] = r.self.ID
	if r.sign != nil {
		r.sign(fwd)
	}
	ctx, cancel := context.WithTimeout(ctx, r.forwardTimeout)
	defer cancel()
	var moved <-chan dledger.LeaderEvent
	if follow {
		ch, unsubscribe := r.node.SubscribeLeader()
		defer unsubscribe()
		moved = ch
	}
	for {
		addr := r.leaderRemotingAddr()
		if addr == "" && follow && r.isLeader() {
			return nil
		}
		if addr == "" {
			return r.noLeader(req)
		}
		again, resp, err := r.invokeLeader(ctx, addr, fwd, moved)
		if again {
			continue
		}
		if err != nil {
			return errResponse(req, remoting.ResSystemError, "forwarding to leader %s: %v", addr, err)
		}
		out := resp.Clone()
		out.Opaque, out.SerializeType = req.Opaque, req.SerializeType
		return out
	}
}

// invokeLeader sends fwd to the leader at addr; again is true when this
// node saw another leader elected before the answer came (never with a
// nil moved).
func (r *replica) invokeLeader(ctx context.Context, addr string, fwd *remoting.Command, moved <-chan dledger.LeaderEvent) (again bool, _ *remoting.Command, _ error) {
	if moved == nil {
		resp, err := r.client.Invoke(ctx, addr, fwd)
		return false, resp, err
	}
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		resp *remoting.Command
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := r.client.Invoke(ictx, addr, fwd)
		done <- answer{resp, err}
	}()
	for {
		select {
		case a := <-done:
			return false, a.resp, a.err
		case ev := <-moved:
			if ev.LeaderID != "" && r.remotingAddrOf(ev.LeaderID) != addr {
				return true, nil, nil
			}
		}
	}
}

// noLeader answers req while this node knows no leader to forward to.
func (r *replica) noLeader(req *remoting.Command) *remoting.Command {
	if r.noSpace != nil {
		if err := r.noSpace(); err != nil {
			return errResponse(req, remoting.ResServiceNotAvailable,
				"service not available now: disk full on broker %s (%v) and broker group %s has no leader right now; writes resume by themselves once space is freed",
				r.self.ID, err, r.group)
		}
	}
	return errResponse(req, remoting.ResServiceNotAvailable,
		"broker group %s has no leader right now, retry", r.group)
}

// leaderOnly forwards req to the leader unless this node leads.
func (r *replica) leaderOnly(h handlerFunc) handlerFunc {
	return func(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
		if !r.isLeader() {
			return r.forward(ctx, req)
		}
		return h(ctx, c, req)
	}
}

// proposeFailure turns a failed proposal into the answer to req: a
// not-leader error is forwarded (nothing was appended, resending is safe);
// the rest get a code the client retries on and a remark saying what
// happened.
func (r *replica) proposeFailure(ctx context.Context, req *remoting.Command, err error) *remoting.Command {
	var nl *dledger.NotLeaderError
	switch {
	case errors.As(err, &nl):
		return r.forward(ctx, req)
	case errors.Is(err, dledger.ErrStaleProposal):
		return errResponse(req, remoting.ResServiceNotAvailable, "leadership changed before the write was stored; retry: %v", err)
	case errors.Is(err, dledger.ErrLeadershipLost), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errResponse(req, remoting.ResSystemError, "write outcome unknown (may be stored): %v", err)
	case errors.Is(err, commitlog.ErrDiskFull), errors.Is(err, commitlog.ErrNoSpace):
		return errResponse(req, remoting.ResServiceNotAvailable,
			"service not available now: disk full on broker %s (%v); writes resume by themselves once space is freed", r.self.ID, err)
	case errors.Is(err, dledger.ErrTooLarge):
		return errResponse(req, remoting.ResMessageIllegal, "%v", err)
	default:
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
}

// ready returns a term in which this node leads and has applied
// everything committed before it, running a barrier once per term: what
// it reads of the applied state afterwards includes every write of
// earlier terms (decisions made against it are then made once).
//
// Sends call it (the dedupe window): once the term's barrier ran, it takes
// no lock.
func (r *replica) ready(ctx context.Context) (uint64, error) {
	if term, ok := r.readyNow(); ok {
		return term, nil
	}
	r.termMu.Lock()
	defer r.termMu.Unlock()
	if term, ok := r.readyNow(); ok {
		return term, nil
	}
	term, err := r.barrier(ctx)
	if err != nil {
		return 0, err
	}
	r.readyTerm.Store(term)
	return term, nil
}

// readyNow is the current term, if this node leads it and ran its barrier.
func (r *replica) readyNow() (uint64, bool) {
	term := r.node.Raft().CurrentTerm()
	return term, r.readyTerm.Load() == term && r.isLeader()
}

// barrier waits until every entry of the log is applied here and returns
// the term it did so in; state read afterwards is committed state of that
// term's start plus this node's own later writes.
func (r *replica) barrier(ctx context.Context) (uint64, error) {
	rf := r.node.Raft()
	term := rf.CurrentTerm()
	if rf.State() != raft.Leader {
		return 0, errNotLeaderTerm
	}
	f := rf.Barrier(barrierTimeout)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return 0, fmt.Errorf("broker: barrier: %w", err)
		}
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if rf.State() != raft.Leader || rf.CurrentTerm() != term {
		return 0, errNotLeaderTerm
	}
	return term, nil
}
