package broker

// Raft admin: raftmq's own codes (9100–9104) for the group's membership,
// leadership and snapshots, behind `raftmq raft members|add-voter|
// remove-voter|transfer|snapshot`. A snapshot is taken by the node the
// request reaches (ext index and term of the snapshot, fresh=false when
// nothing was applied since the last one).
// Members is answered by any node from its raft configuration; the three
// changes run on the leader, so a follower forwards them. A node to add
// must be started with --join (it then waits, without bootstrapping) and
// be listed, with its client address, in every node's --peers so writes
// can be forwarded to it once it leads.

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// membershipTimeout bounds removing a member.
const membershipTimeout = 10 * time.Second

// addVoterTimeout bounds one add-voter request, within the admin client's
// 5 s request timeout: a new node still catching up after half of it is
// answered SYSTEM_BUSY (it stays a non-voter) and the client asks again.
const addVoterTimeout = 4 * time.Second

// raftAdmin serves raftmq's membership and leadership codes.
type raftAdmin struct {
	rep *replica
	log hclog.Logger
}

func (a *raftAdmin) register(m mux) {
	m.HandleFunc(remoting.ReqRaftMembers, a.members)
	m.HandleFunc(remoting.ReqRaftAddVoter, a.rep.leaderOnly(a.addVoter))
	m.HandleFunc(remoting.ReqRaftRemoveServer, a.rep.leaderOnly(a.removeServer))
	m.HandleFunc(remoting.ReqRaftTransferLeadership, a.rep.leaderOnly(a.transfer))
	m.HandleFunc(remoting.ReqRaftSnapshot, a.snapshot)
}

// snapshot takes a raft snapshot of this node now.
func (a *raftAdmin) snapshot(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	index, term, fresh, err := a.rep.node.Snapshot()
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "snapshot of %s: %v", a.rep.self.ID, err)
	}
	a.log.Info("snapshot taken on request", "index", index, "term", term, "fresh", fresh)
	resp := okResponse(req)
	resp.ExtFields = map[string]string{"index": strconv.FormatUint(index, 10),
		"term": strconv.FormatUint(term, 10), "fresh": strconv.FormatBool(fresh), "nodeId": a.rep.self.ID}
	return resp
}

// isMember reports whether id is in the configuration, voter or not.
func (a *raftAdmin) isMember(id string) bool {
	ms, err := a.raftMembers()
	if err != nil {
		return false
	}
	for _, m := range ms {
		if m.ID == id {
			return true
		}
	}
	return false
}

// raftMembers lists the voters, then the non-voters still catching up.
func (a *raftAdmin) raftMembers() ([]protocol.RaftMember, error) {
	voters, err := a.rep.node.Members()
	if err != nil {
		return nil, err
	}
	nonvoters, err := a.rep.node.Nonvoters()
	if err != nil {
		return nil, err
	}
	_, leader := a.rep.node.Leader()
	out := make([]protocol.RaftMember, 0, len(voters)+len(nonvoters))
	for i, p := range append(voters, nonvoters...) {
		out = append(out, protocol.RaftMember{ID: p.ID, RaftAddr: p.Addr, RemotingAddr: a.rep.remotingAddrOf(p.ID),
			Leader: p.ID == leader, Nonvoter: i >= len(voters)})
	}
	return out, nil
}

func (a *raftAdmin) members(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	out, err := a.raftMembers()
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "reading raft configuration: %v", err)
	}
	return jsonResponse(req, out)
}

func (a *raftAdmin) addVoter(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	id, addr := req.ExtFields["id"], req.ExtFields["raftAddr"]
	if id == "" || addr == "" {
		return errResponse(req, remoting.ResSystemError, "add voter needs ext id and raftAddr")
	}
	ctx, cancel := context.WithTimeout(ctx, addVoterTimeout)
	defer cancel()
	if err := a.rep.node.AddVoter(ctx, id, addr); err != nil {
		if errors.Is(err, dledger.ErrCatchingUp) {
			return errResponse(req, remoting.ResSystemBusy, "%v", err)
		}
		return a.rep.proposeFailure(ctx, req, err)
	}
	a.log.Info("added voter", "id", id, "raft_addr", addr)
	return okResponse(req)
}

func (a *raftAdmin) removeServer(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	id := req.ExtFields["id"]
	if id == "" {
		return errResponse(req, remoting.ResSystemError, "remove server needs ext id")
	}
	if !a.isMember(id) {
		// raft treats removing a non-member as done; an operator's typo
		// deserves an answer that says so.
		return errResponse(req, remoting.ResSystemError, "%s is not a member of group %s", id, a.rep.group)
	}
	ctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	if err := a.rep.node.RemoveServer(ctx, id); err != nil {
		return a.rep.proposeFailure(ctx, req, err)
	}
	a.log.Info("removed server", "id", id)
	return okResponse(req)
}

// transfer hands leadership to ext "to", or to the most caught-up
// follower when it is empty.
func (a *raftAdmin) transfer(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	to := req.ExtFields["to"]
	if err := a.rep.node.TransferLeadership(ctx, to); err != nil {
		return a.rep.proposeFailure(ctx, req, err)
	}
	a.log.Info("transferred leadership", "to", to)
	return okResponse(req)
}
