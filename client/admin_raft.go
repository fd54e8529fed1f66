package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// group finds one broker group by name.
func (a *Admin) group(ctx context.Context, brokerName string) (protocol.BrokerData, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return protocol.BrokerData{}, err
	}
	bd, ok := ci.BrokerAddrTable[brokerName]
	if !ok {
		return bd, fmt.Errorf("%w: %s", ErrBrokerNotFound, brokerName)
	}
	return bd, nil
}

// RaftMembers lists a broker group's voting members (raftmq brokers only).
func (a *Admin) RaftMembers(ctx context.Context, brokerName string) ([]protocol.RaftMember, error) {
	bd, err := a.group(ctx, brokerName)
	if err != nil {
		return nil, err
	}
	resp, _, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
		return remoting.NewRequest(remoting.ReqRaftMembers, nil, nil)
	})
	if err != nil {
		return nil, err
	}
	var out []protocol.RaftMember
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return nil, fmt.Errorf("client: raft members of %s: %w", brokerName, err)
	}
	return out, nil
}

func (a *Admin) raftChange(ctx context.Context, brokerName string, code int16, ext map[string]string) error {
	bd, err := a.group(ctx, brokerName)
	if err != nil {
		return err
	}
	_, err = a.callGroup(ctx, bd, func() *remoting.Command { return remoting.NewRequest(code, ext, nil) })
	return err
}

// AddVoter adds node id, reachable for raft at raftAddr, to a broker group.
// The node must be running with Join set (raftmq broker --join). It joins
// as a non-voter and is promoted once it has caught up with the leader's
// log; while the leader answers that it is still catching up
// (SYSTEM_BUSY), AddVoter asks again until ctx ends.
func (a *Admin) AddVoter(ctx context.Context, brokerName, id, raftAddr string) error {
	for {
		err := a.raftChange(ctx, brokerName, remoting.ReqRaftAddVoter, map[string]string{"id": id, "raftAddr": raftAddr})
		var e *Error
		if !errors.As(err, &e) || e.Code != remoting.ResSystemBusy {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(catchUpRetry):
		}
	}
}

// catchUpRetry is how long AddVoter waits before asking again about a node
// still catching up.
const catchUpRetry = 200 * time.Millisecond

// RemoveServer removes node id from a broker group's configuration.
func (a *Admin) RemoveServer(ctx context.Context, brokerName, id string) error {
	return a.raftChange(ctx, brokerName, remoting.ReqRaftRemoveServer, map[string]string{"id": id})
}

// TransferLeadership hands a group's leadership to node to, or to its most
// caught-up follower when to is empty.
func (a *Admin) TransferLeadership(ctx context.Context, brokerName, to string) error {
	return a.raftChange(ctx, brokerName, remoting.ReqRaftTransferLeadership, map[string]string{"to": to})
}

// Snapshot is the raft snapshot a node took on request.
type Snapshot struct {
	// NodeID is the node that took it.
	NodeID string `json:"nodeId"`
	// Addr is the node's client address.
	Addr string `json:"addr"`
	// Index and Term are the last raft entry the snapshot covers.
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	// Fresh is false when nothing was applied since the node's newest
	// snapshot (none was taken; Index is the node's applied index).
	Fresh bool `json:"fresh"`
}

// RaftSnapshot makes the node at addr take a raft snapshot now (raftmq
// brokers only): raft then truncates the log behind it, keeping its
// trailing entries for followers.
func (a *Admin) RaftSnapshot(ctx context.Context, addr string) (Snapshot, error) {
	resp, err := a.c.call(ctx, addr, remoting.NewRequest(remoting.ReqRaftSnapshot, nil, nil))
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{NodeID: resp.ExtFields["nodeId"], Addr: addr, Fresh: resp.ExtFields["fresh"] == "true"}
	s.Index, _ = strconv.ParseUint(resp.ExtFields["index"], 10, 64)
	s.Term, _ = strconv.ParseUint(resp.ExtFields["term"], 10, 64)
	return s, nil
}
