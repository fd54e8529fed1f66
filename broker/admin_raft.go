package broker

// Raft admin: raftmq's own codes (9100–9103) for the group's membership and
// leadership, behind `raftmq cluster members|add-voter|remove|transfer`.
// Members is answered by any node from its raft configuration; the three
// changes run on the leader, so a follower forwards them. A node to add
// must be started with --join (it then waits, without bootstrapping) and
// be listed, with its client address, in every node's --peers so writes
// can be forwarded to it once it leads.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/raftmq/raftmq/remoting"
)

// RaftMember is one entry of the RAFTMQ_RAFT_MEMBERS answer.
type RaftMember struct {
	ID           string `json:"id"`
	RaftAddr     string `json:"raftAddr"`
	RemotingAddr string `json:"remotingAddr,omitempty"`
	Leader       bool   `json:"leader"`
}

// membershipTimeout bounds one membership change; adding a voter waits for
// raft to accept the configuration entry, not for the node to catch up.
const membershipTimeout = 10 * time.Second

func (b *Broker) registerRaftAdmin() {
	b.handle(remoting.ReqRaftMembers, b.raftMembers)
	b.handle(remoting.ReqRaftAddVoter, b.leaderOnly(b.raftAddVoter))
	b.handle(remoting.ReqRaftRemoveServer, b.leaderOnly(b.raftRemoveServer))
	b.handle(remoting.ReqRaftTransferLeadership, b.leaderOnly(b.raftTransfer))
}

// leaderOnly forwards req to the leader unless this node leads.
func (b *Broker) leaderOnly(h handlerFunc) handlerFunc {
	return func(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
		if !b.node.IsLeader() {
			return b.forward(ctx, req)
		}
		return h(ctx, c, req)
	}
}

func (b *Broker) remotingAddrOf(id string) string {
	for _, p := range b.cfg.Peers {
		if p.ID == id {
			return p.RemotingAddr
		}
	}
	return ""
}

func (b *Broker) isMember(id string) bool {
	peers, err := b.node.Members()
	if err != nil {
		return false
	}
	for _, p := range peers {
		if p.ID == id {
			return true
		}
	}
	return false
}

func (b *Broker) raftMembers(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	peers, err := b.node.Members()
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "reading raft configuration: %v", err)
	}
	_, leader := b.node.Leader()
	out := make([]RaftMember, 0, len(peers))
	for _, p := range peers {
		out = append(out, RaftMember{ID: p.ID, RaftAddr: p.Addr, RemotingAddr: b.remotingAddrOf(p.ID), Leader: p.ID == leader})
	}
	body, err := json.Marshal(out)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	resp := okResponse(req)
	resp.Body = body
	return resp
}

func (b *Broker) raftAddVoter(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	id, addr := req.ExtFields["id"], req.ExtFields["raftAddr"]
	if id == "" || addr == "" {
		return errResponse(req, remoting.ResSystemError, "add voter needs ext id and raftAddr")
	}
	ctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	if err := b.node.AddVoter(ctx, id, addr); err != nil {
		return b.proposeFailure(ctx, req, err)
	}
	b.log.Info("added voter", "id", id, "raft_addr", addr)
	return okResponse(req)
}

func (b *Broker) raftRemoveServer(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	id := req.ExtFields["id"]
	if id == "" {
		return errResponse(req, remoting.ResSystemError, "remove server needs ext id")
	}
	if !b.isMember(id) {
		// raft treats removing a non-member as done; an operator's typo
		// deserves an answer that says so.
		return errResponse(req, remoting.ResSystemError, "%s is not a member of group %s", id, b.cfg.BrokerName)
	}
	ctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	if err := b.node.RemoveServer(ctx, id); err != nil {
		return b.proposeFailure(ctx, req, err)
	}
	b.log.Info("removed server", "id", id)
	return okResponse(req)
}

// raftTransfer hands leadership to ext "to", or to the most caught-up
// follower when it is empty.
func (b *Broker) raftTransfer(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	to := req.ExtFields["to"]
	if err := b.node.TransferLeadership(ctx, to); err != nil {
		return b.proposeFailure(ctx, req, err)
	}
	b.log.Info("transferred leadership", "to", to)
	return okResponse(req)
}
