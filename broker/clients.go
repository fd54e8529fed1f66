package broker

// Clients: HEART_BEAT (34), UNREGISTER_CLIENT (35) and
// GET_CONSUMER_LIST_BY_GROUP (38), as RocketMQ's ClientManageProcessor and
// ConsumerManageProcessor.
//
// Every node keeps its own view of the clients connected to it (clients
// heartbeat every broker id of a group every 30 s): per consumer group the
// client channels and the group's subscriptions, per producer group the
// client ids. This is node-local state, never replicated. A consumer
// group's first heartbeat creates its %RETRY% topic before it is answered,
// so the client finds a route for it. When a group's membership changes —
// a client joins, unregisters, its connection closes or its heartbeats stop
// for Config.ClientChannelExpiry — every remaining client of the group gets
// NOTIFY_CONSUMER_IDS_CHANGED (40) and rebalances at once.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/raftmq/raftmq/remoting"
)

// retryTopicTimeout bounds the creation of a group's %RETRY% topic while
// a heartbeat waits for it: below the clients' 3 s heartbeat timeout, so
// the heartbeat is still answered when no leader is reachable.
const retryTopicTimeout = 2 * time.Second

// maxClientScan caps the expiry scan interval (RocketMQ scans every 10 s).
const maxClientScan = 10 * time.Second

// heartbeatData is the HEART_BEAT body (RocketMQ's HeartbeatData).
type heartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []producerData `json:"producerDataSet"`
	ConsumerDataSet []consumerData `json:"consumerDataSet"`
}

type producerData struct {
	GroupName string `json:"groupName"`
}

type consumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         string             `json:"consumeType"`
	MessageModel        string             `json:"messageModel"`
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	SubscriptionDataSet []subscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// Message models, as RocketMQ's MessageModel names.
const (
	modelClustering   = "CLUSTERING"
	modelBroadcasting = "BROADCASTING"
)

func (b *Broker) registerClients() {
	b.consumers = newConsumerManager()
	b.producers = newProducerManager()
	b.retryCreating = newFlight()
	b.handle(remoting.ReqHeartBeat, b.handleHeartbeat)
	b.handle(remoting.ReqUnregisterClient, b.handleUnregisterClient)
	b.handle(remoting.ReqGetConsumerListByGroup, b.handleGetConsumerList)
	b.rs.OnConnClose(b.clientConnClosed)
}

// startClients starts the expiry scan and the notification sender.
func (b *Broker) startClients() {
	scan := min(maxClientScan, b.cfg.ClientChannelExpiry/3)
	b.every(scan, b.expireClients)
	b.goBackground(b.consumers.notifyLoop(b))
}

func (b *Broker) handleHeartbeat(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	var hb heartbeatData
	if err := json.Unmarshal(req.Body, &hb); err != nil {
		return errResponse(req, remoting.ResSystemError, "heartbeat body is not valid HeartbeatData JSON: %v", err)
	}
	if hb.ClientID == "" {
		return errResponse(req, remoting.ResSystemError, "heartbeat without clientID")
	}
	now := time.Now()
	for _, cd := range hb.ConsumerDataSet {
		if cd.GroupName == "" {
			continue
		}
		if cd.MessageModel != modelBroadcasting {
			b.ensureRetryTopic(ctx, cd.GroupName)
		}
		subs := make(map[string]*subscription, len(cd.SubscriptionDataSet))
		for _, sd := range cd.SubscriptionDataSet {
			s := sd.parse()
			subs[s.Topic] = s
		}
		ch := &clientChannel{
			clientID: hb.ClientID, conn: c, lastSeen: now,
			consumeType: cd.ConsumeType, messageModel: cd.MessageModel, consumeFromWhere: cd.ConsumeFromWhere,
		}
		if b.consumers.register(cd.GroupName, ch, subs) {
			b.log.Info("consumer joined", "group", cd.GroupName, "client", hb.ClientID, "remote", c.RemoteAddr().String())
			b.consumers.queueNotify(cd.GroupName)
		}
	}
	for _, pd := range hb.ProducerDataSet {
		if pd.GroupName != "" {
			b.producers.register(pd.GroupName, hb.ClientID, c, now)
		}
	}
	return okResponse(req)
}

// ensureRetryTopic creates a consumer group's %RETRY% topic if this node
// does not know it yet. Concurrent heartbeats of one group share one
// creation. A failure is logged and the heartbeat still succeeds: the
// client heartbeats again in 30 s and the creation is retried then.
func (b *Broker) ensureRetryTopic(ctx context.Context, group string) {
	name := RetryTopic(group)
	if _, ok := b.topic(name); ok {
		return
	}
	if err := ValidateTopic(name); err != nil {
		b.log.Warn("consumer group name makes an invalid retry topic", "group", group, "error", err)
		return
	}
	tc := retryTopicConfig(group)
	if g, ok := b.node.Metadata().SubscriptionGroup(group); ok && g.RetryQueueNums > 0 {
		tc.ReadQueueNums, tc.WriteQueueNums = g.RetryQueueNums, g.RetryQueueNums
	}
	ctx, cancel := context.WithTimeout(ctx, retryTopicTimeout)
	defer cancel()
	err := b.retryCreating.do(ctx, name, func() error {
		if _, err := b.ensureTopic(ctx, tc); err != nil {
			return err
		}
		if b.node.IsLeader() {
			// Created here: publish the route before the client asks for
			// it. (Through a follower, the leader's UPDATE_AND_CREATE_TOPIC
			// registered before answering.)
			b.registerAll(ctx)
		}
		return nil
	})
	if err != nil {
		b.log.Warn("creating retry topic failed; the next heartbeat retries", "topic", name, "error", err)
	}
}

func (b *Broker) handleUnregisterClient(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	clientID := req.ExtFields["clientID"]
	if clientID == "" {
		return errResponse(req, remoting.ResSystemError, "the custom field <clientID> is null")
	}
	if g := req.ExtFields["producerGroup"]; g != "" {
		b.producers.unregister(g, clientID)
	}
	if g := req.ExtFields["consumerGroup"]; g != "" {
		if b.consumers.unregister(g, clientID) {
			b.log.Info("consumer unregistered", "group", g, "client", clientID)
			b.consumers.queueNotify(g)
		}
	}
	return okResponse(req)
}

// consumerListBody is GET_CONSUMER_LIST_BY_GROUP's answer
// (GetConsumerListByGroupResponseBody).
type consumerListBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

func (b *Broker) handleGetConsumerList(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	group := req.ExtFields["consumerGroup"]
	if group == "" {
		return errResponse(req, remoting.ResSystemError, "the custom field <consumerGroup> is null")
	}
	ids := b.consumers.clientIDs(group)
	if len(ids) == 0 {
		return errResponse(req, remoting.ResSystemError, "no consumer for this group, %s", group)
	}
	body, err := json.Marshal(consumerListBody{ConsumerIDList: ids})
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "encoding consumer list: %v", err)
	}
	resp := okResponse(req)
	resp.Body = body
	return resp
}

// clientConnClosed drops the state of the clients on c and tells the
// remaining members of their groups. It runs on the closing goroutine and
// only queues the notifications.
func (b *Broker) clientConnClosed(c *remoting.Conn) {
	for _, g := range b.consumers.dropConn(c) {
		b.log.Info("consumer connection closed", "group", g, "remote", c.RemoteAddr().String())
		b.consumers.queueNotify(g)
	}
	b.producers.dropConn(c)
}

// expireClients drops clients whose heartbeats stopped.
func (b *Broker) expireClients() {
	cutoff := time.Now().Add(-b.cfg.ClientChannelExpiry)
	for _, g := range b.consumers.expire(cutoff) {
		b.log.Info("consumer heartbeats expired", "group", g)
		b.consumers.queueNotify(g)
	}
	b.producers.expire(cutoff)
}

// ConsumerSubscription returns the subscription expression a consumer
// group's heartbeats announced for topic on this node (admin and tests).
func (b *Broker) ConsumerSubscription(group, topic string) (expr string, ok bool) {
	s := b.consumers.subscription(group, topic)
	if s == nil {
		return "", false
	}
	return s.SubString, true
}
