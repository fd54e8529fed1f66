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

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// retryTopicTimeout bounds the creation of a group's %RETRY% topic while
// a heartbeat waits for it: below the clients' 3 s heartbeat timeout, so
// the heartbeat is still answered when no leader is reachable.
const retryTopicTimeout = 2 * time.Second

// maxClientScan caps the expiry scan interval (RocketMQ scans every 10 s).
const maxClientScan = 10 * time.Second

// clientService keeps the clients connected to this node.
type clientService struct {
	rep       *replica
	meta      *meta.State
	topics    *topicTable
	consumers *consumerManager
	producers *producerManager
	creating  *flight // %RETRY% topic creations
	subs      subscriptions
	// registerAll publishes routes now (a retry topic created here).
	registerAll func(ctx context.Context)
	expiry      time.Duration
	log         hclog.Logger
}

func (s *clientService) register(m mux) {
	m.HandleFunc(remoting.ReqHeartBeat, s.heartbeat)
	m.HandleFunc(remoting.ReqUnregisterClient, s.unregisterClient)
	m.HandleFunc(remoting.ReqGetConsumerListByGroup, s.consumerList)
}

// start starts the expiry scan and the notification sender.
func (s *clientService) start(bg *background) {
	scan := min(maxClientScan, s.expiry/3)
	bg.every(scan, s.expireClients)
	bg.goRun(s.consumers.notifyLoop(s.meta, s.log))
}

func (s *clientService) heartbeat(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	var hb protocol.HeartbeatData
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
		if cd.MessageModel != protocol.Broadcasting {
			s.ensureRetryTopic(ctx, cd.GroupName)
		}
		subs := make(map[string]*subscription, len(cd.SubscriptionDataSet))
		for _, sd := range cd.SubscriptionDataSet {
			sub := s.subs.fromHeartbeat(sd)
			subs[sub.Topic] = sub
		}
		ch := &clientChannel{
			clientID: hb.ClientID, conn: c, lastSeen: now,
			consumeType: cd.ConsumeType, messageModel: cd.MessageModel, consumeFromWhere: cd.ConsumeFromWhere,
			language: req.Language, version: req.Version,
		}
		if s.consumers.register(cd.GroupName, ch, subs) {
			s.log.Info("consumer joined", "group", cd.GroupName, "client", hb.ClientID, "remote", c.RemoteAddr().String())
			s.consumers.queueNotify(cd.GroupName)
		}
	}
	for _, pd := range hb.ProducerDataSet {
		ch := &clientChannel{clientID: hb.ClientID, conn: c, lastSeen: now, language: req.Language, version: req.Version}
		if pd.GroupName != "" && s.producers.register(pd.GroupName, ch) {
			s.log.Debug("producer joined", "group", pd.GroupName, "client", hb.ClientID, "remote", c.RemoteAddr().String())
		}
	}
	return okResponse(req)
}

// ensureRetryTopic creates a consumer group's %RETRY% topic if this node
// does not know it yet. Concurrent heartbeats of one group share one
// creation. A failure is logged and the heartbeat still succeeds: the
// client heartbeats again in 30 s and the creation is retried then.
func (s *clientService) ensureRetryTopic(ctx context.Context, group string) {
	name := protocol.RetryTopic(group)
	if _, ok := s.topics.topic(name); ok {
		return
	}
	if err := protocol.ValidateTopic(name); err != nil {
		s.log.Warn("consumer group name makes an invalid retry topic", "group", group, "error", err)
		return
	}
	tc := retryTopicConfig(group)
	if g, ok := s.meta.SubscriptionGroup(group); ok && g.RetryQueueNums > 0 {
		tc.ReadQueueNums, tc.WriteQueueNums = g.RetryQueueNums, g.RetryQueueNums
	}
	ctx, cancel := context.WithTimeout(ctx, retryTopicTimeout)
	defer cancel()
	err := s.creating.do(ctx, name, func() error {
		if _, err := s.topics.ensure(ctx, tc); err != nil {
			return err
		}
		if s.rep.isLeader() {
			// Created here: publish the route before the client asks for
			// it. (Through a follower, the leader's UPDATE_AND_CREATE_TOPIC
			// registered before answering.)
			s.registerAll(ctx)
		}
		return nil
	})
	if err != nil {
		s.log.Warn("creating retry topic failed; the next heartbeat retries", "topic", name, "error", err)
	}
}

func (s *clientService) unregisterClient(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	clientID := req.ExtFields["clientID"]
	if clientID == "" {
		return errResponse(req, remoting.ResSystemError, "the custom field <clientID> is null")
	}
	if g := req.ExtFields["producerGroup"]; g != "" {
		s.producers.unregister(g, clientID)
	}
	if g := req.ExtFields["consumerGroup"]; g != "" {
		if s.consumers.unregister(g, clientID) {
			s.log.Info("consumer unregistered", "group", g, "client", clientID)
			s.consumers.queueNotify(g)
		}
	}
	return okResponse(req)
}

func (s *clientService) consumerList(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	group := req.ExtFields["consumerGroup"]
	if group == "" {
		return errResponse(req, remoting.ResSystemError, "the custom field <consumerGroup> is null")
	}
	ids := s.consumers.clientIDs(group)
	if len(ids) == 0 {
		return errResponse(req, remoting.ResSystemError, "no consumer for this group, %s", group)
	}
	return jsonResponse(req, protocol.ConsumerListBody{ConsumerIDList: ids})
}

// connClosed drops the state of the clients on c and tells the remaining
// members of their groups. It runs on the closing goroutine and only
// queues the notifications.
func (s *clientService) connClosed(c *remoting.Conn) {
	for _, g := range s.consumers.dropConn(c) {
		s.log.Info("consumer connection closed", "group", g, "remote", c.RemoteAddr().String())
		s.consumers.queueNotify(g)
	}
	s.producers.dropConn(c)
}

// expireClients drops clients whose heartbeats stopped.
func (s *clientService) expireClients() {
	cutoff := time.Now().Add(-s.expiry)
	for _, g := range s.consumers.expire(cutoff) {
		s.log.Info("consumer heartbeats expired", "group", g)
		s.consumers.queueNotify(g)
	}
	s.producers.expire(cutoff)
}
