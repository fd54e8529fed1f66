package broker

// Admin: subscription groups. UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200)
// takes a SubscriptionGroupConfig JSON body (missing fields get RocketMQ's
// defaults) and proposes it; DELETE_SUBSCRIPTIONGROUP (207, ext groupName)
// proposes its deletion; both are forwarded by a follower.
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) answers this node's applied groups
// as RocketMQ's SubscriptionGroupWrapper.

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// groupAdmin serves the subscription-group admin codes.
type groupAdmin struct {
	rep    *replica
	meta   *meta.State
	tables *tables
	log    hclog.Logger
}

func (a *groupAdmin) register(m mux) {
	m.HandleFunc(remoting.ReqUpdateAndCreateSubscriptionGroup, a.rep.leaderOnly(a.putGroup))
	m.HandleFunc(remoting.ReqGetAllSubscriptionGroupConfig, a.allGroups)
	m.HandleFunc(remoting.ReqDeleteSubscriptionGroup, a.rep.leaderOnly(a.deleteGroup))
}

func (a *groupAdmin) putGroup(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	g := protocol.DefaultSubscriptionGroupConfig()
	if err := json.Unmarshal(req.Body, &g); err != nil {
		return errResponse(req, remoting.ResSystemError, "subscription group body is not SubscriptionGroupConfig JSON: %v", err)
	}
	if g.GroupName == "" {
		return errResponse(req, remoting.ResSystemError, "subscription group body has no groupName")
	}
	if g.RetryQueueNums < 0 || g.RetryQueueNums > protocol.MaxQueueNums || g.RetryMaxTimes < 0 {
		return errResponse(req, remoting.ResSystemError, "subscription group %s: retryQueueNums %d or retryMaxTimes %d out of range",
			g.GroupName, g.RetryQueueNums, g.RetryMaxTimes)
	}
	if _, err := a.rep.propose(ctx, &meta.PutSubscriptionGroupCommand{Group: fromGroupJSON(g)}); err != nil {
		return a.rep.proposeFailure(ctx, req, err)
	}
	a.log.Info("subscription group created or updated", "group", g.GroupName)
	return okResponse(req)
}

func (a *groupAdmin) deleteGroup(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	name := req.ExtFields["groupName"]
	if name == "" {
		return errResponse(req, remoting.ResSystemError, "the custom field <groupName> is null")
	}
	if _, err := a.rep.propose(ctx, &meta.DeleteSubscriptionGroupCommand{Name: name}); err != nil {
		return a.rep.proposeFailure(ctx, req, err)
	}
	a.log.Info("subscription group deleted", "group", name)
	return okResponse(req)
}

func (a *groupAdmin) allGroups(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	groups := a.meta.SubscriptionGroups()
	table := make(map[string]protocol.SubscriptionGroupConfig, len(groups))
	for _, g := range groups {
		table[g.GroupName] = toGroupJSON(g)
	}
	return jsonResponse(req, protocol.SubscriptionGroupWrapper{SubscriptionGroupTable: table, DataVersion: a.tables.dataVersion()})
}
