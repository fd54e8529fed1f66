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

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/remoting"
)

func (b *Broker) registerGroupAdmin() {
	b.handle(remoting.ReqUpdateAndCreateSubscriptionGroup, b.putGroup)
	b.handle(remoting.ReqGetAllSubscriptionGroupConfig, b.allGroups)
	b.handle(remoting.ReqDeleteSubscriptionGroup, b.deleteGroup)
}

func (b *Broker) putGroup(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.node.IsLeader() {
		return b.forward(ctx, req)
	}
	g := defaultSubscriptionGroupJSON()
	if err := json.Unmarshal(req.Body, &g); err != nil {
		return errResponse(req, remoting.ResSystemError, "subscription group body is not SubscriptionGroupConfig JSON: %v", err)
	}
	if g.GroupName == "" {
		return errResponse(req, remoting.ResSystemError, "subscription group body has no groupName")
	}
	if g.RetryQueueNums < 0 || g.RetryQueueNums > maxTopicQueues || g.RetryMaxTimes < 0 {
		return errResponse(req, remoting.ResSystemError, "subscription group %s: retryQueueNums %d or retryMaxTimes %d out of range",
			g.GroupName, g.RetryQueueNums, g.RetryMaxTimes)
	}
	if _, err := b.propose(ctx, &dledger.PutSubscriptionGroupCommand{Group: g.config()}); err != nil {
		return b.proposeFailure(ctx, req, err)
	}
	b.log.Info("subscription group created or updated", "group", g.GroupName)
	return okResponse(req)
}

func (b *Broker) deleteGroup(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.node.IsLeader() {
		return b.forward(ctx, req)
	}
	name := req.ExtFields["groupName"]
	if name == "" {
		return errResponse(req, remoting.ResSystemError, "the custom field <groupName> is null")
	}
	if _, err := b.propose(ctx, &dledger.DeleteSubscriptionGroupCommand{Name: name}); err != nil {
		return b.proposeFailure(ctx, req, err)
	}
	b.log.Info("subscription group deleted", "group", name)
	return okResponse(req)
}

func (b *Broker) allGroups(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	groups := b.node.Metadata().SubscriptionGroups()
	table := make(map[string]subscriptionGroupJSON, len(groups))
	for _, g := range groups {
		table[g.GroupName] = toGroupJSON(g)
	}
	return jsonResponse(req, subscriptionGroupWrapper{SubscriptionGroupTable: table, DataVersion: b.dataVersion()})
}
