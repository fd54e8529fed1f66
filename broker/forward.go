package broker

// Forwarding: writes reach the leader. A follower (or a node that lost
// leadership mid-request) sends the client's request on to the leader and
// returns the leader's answer under the client's opaque, so a client with a
// stale route — every RocketMQ client for up to 30 s after a failover —
// still succeeds. A request is forwarded at most once: one that arrives
// forwarded at a non-leader is answered SERVICE_NOT_AVAILABLE, and the
// client retries.

import (
	"context"
	"errors"
	"fmt"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/remoting"
)

// extForwarded marks a request forwarded by a follower (raftmq extension).
const extForwarded = "raftmqForwarded"

// leaderRemotingAddr is the leader's client-facing address, "" when no
// leader is known or this node leads.
func (b *Broker) leaderRemotingAddr() string {
	_, id := b.node.Leader()
	if id == "" || id == b.self.ID {
		return ""
	}
	for _, p := range b.cfg.Peers {
		if p.ID == id {
			return p.RemotingAddr
		}
	}
	return ""
}

// forward sends req to the leader and returns the leader's response
// addressed to req.
func (b *Broker) forward(ctx context.Context, req *remoting.Command) *remoting.Command {
	if req.ExtFields[extForwarded] != "" {
		return errResponse(req, remoting.ResServiceNotAvailable,
			"broker %s is not the leader of %s (request already forwarded once)", b.self.ID, b.cfg.BrokerName)
	}
	addr := b.leaderRemotingAddr()
	if addr == "" {
		return errResponse(req, remoting.ResServiceNotAvailable,
			"broker group %s has no leader right now, retry", b.cfg.BrokerName)
	}
	fwd := req.Clone()
	fwd.Flag &^= remoting.FlagOneway
	if fwd.ExtFields == nil {
		fwd.ExtFields = map[string]string{}
	}
	fwd.ExtFields[extForwarded] = b.self.ID
	ctx, cancel := context.WithTimeout(ctx, b.cfg.ForwardTimeout)
	defer cancel()
	resp, err := b.client.Invoke(ctx, addr, fwd)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "forwarding to leader %s: %v", addr, err)
	}
	out := resp.Clone()
	out.Opaque, out.SerializeType = req.Opaque, req.SerializeType
	return out
}

// proposeFailure turns a failed proposal into the answer to req: a
// not-leader error is forwarded (nothing was appended, resending is safe);
// the rest get a code the client retries on and a remark saying what
// happened.
func (b *Broker) proposeFailure(ctx context.Context, req *remoting.Command, err error) *remoting.Command {
	var nl *dledger.NotLeaderError
	switch {
	case errors.As(err, &nl):
		return b.forward(ctx, req)
	case errors.Is(err, dledger.ErrStaleProposal):
		return errResponse(req, remoting.ResServiceNotAvailable, "leadership changed before the write was stored; retry: %v", err)
	case errors.Is(err, dledger.ErrLeadershipLost), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errResponse(req, remoting.ResSystemError, "write outcome unknown (may be stored): %v", err)
	case errors.Is(err, dledger.ErrTooLarge):
		return errResponse(req, remoting.ResMessageIllegal, "%v", err)
	default:
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
}

// propose runs cmd through the group; it is the one way processors write.
func (b *Broker) propose(ctx context.Context, cmd dledger.Command) (dledger.Result, error) {
	res, err := b.node.Propose(ctx, cmd)
	if err != nil {
		return res, fmt.Errorf("broker: propose %s: %w", cmd.Type(), err)
	}
	return res, nil
}
