package client

// Admin: consumer and producer groups, as mqadmin's updateSubGroup,
// deleteSubGroup, consumerConnection, producerConnection, consumerProgress,
// resetOffsetByTime, cloneGroupOffset and skipAccumulatedMessage.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// SubscriptionGroup is a subscription group's config as one broker group
// holds it.
type SubscriptionGroup struct {
	// BrokerName is the broker group that answered.
	BrokerName string
	// Config is RocketMQ's SubscriptionGroupConfig.
	Config protocol.SubscriptionGroupConfig
}

// SubscriptionGroups returns the subscription group configs of every
// broker group of cluster ("" all clusters)
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG), sorted by group name, then broker
// group. A broker group that cannot be reached fails the call.
func (a *Admin) SubscriptionGroups(ctx context.Context, cluster string) ([]SubscriptionGroup, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	out := []SubscriptionGroup{}
	for _, bd := range groups(ci, cluster, "") {
		var sg protocol.SubscriptionGroupWrapper
		if err := a.groupJSON(ctx, bd, remoting.ReqGetAllSubscriptionGroupConfig, &sg); err != nil {
			return out, err
		}
		for _, g := range sg.SubscriptionGroupTable {
			out = append(out, SubscriptionGroup{BrokerName: bd.BrokerName, Config: g})
		}
	}
	slices.SortFunc(out, func(x, y SubscriptionGroup) int {
		return cmp.Or(cmp.Compare(x.Config.GroupName, y.Config.GroupName), cmp.Compare(x.BrokerName, y.BrokerName))
	})
	return out, nil
}

// SubscriptionGroup returns group's config on each broker group of
// cluster ("" all) that has one; none is not an error (an empty slice).
func (a *Admin) SubscriptionGroup(ctx context.Context, cluster, group string) ([]SubscriptionGroup, error) {
	all, err := a.SubscriptionGroups(ctx, cluster)
	if err != nil {
		return nil, err
	}
	out := []SubscriptionGroup{}
	for _, g := range all {
		if g.Config.GroupName == group {
			out = append(out, g)
		}
	}
	return out, nil
}

// CreateSubscriptionGroup creates or replaces cfg on every broker group of
// cluster ("" all) (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP). Every field of
// cfg is sent: start from protocol.DefaultSubscriptionGroupConfig, or
// from the group's current config to update it. Earlier groups keep the
// config when a later one fails.
func (a *Admin) CreateSubscriptionGroup(ctx context.Context, cluster string, cfg protocol.SubscriptionGroupConfig) ([]Placement, error) {
	if err := protocol.ValidateGroup(cfg.GroupName); err != nil {
		return nil, fmt.Errorf("%w: group %q: %v", ErrInvalidOption, cfg.GroupName, err)
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return a.eachGroupReq(ctx, cluster, func() *remoting.Command {
		return remoting.NewRequest(remoting.ReqUpdateAndCreateSubscriptionGroup, nil, body)
	})
}

// DeleteSubscriptionGroup deletes group's config from every broker group
// of cluster ("" all) (DELETE_SUBSCRIPTIONGROUP). Its committed offsets
// stay, as RocketMQ's.
func (a *Admin) DeleteSubscriptionGroup(ctx context.Context, cluster, group string) ([]Placement, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: no group", ErrInvalidOption)
	}
	return a.eachGroup(ctx, cluster, remoting.ReqDeleteSubscriptionGroup, map[string]string{"groupName": group})
}

// ClientConnection is one client of a group, as a broker group sees it.
type ClientConnection struct {
	// BrokerName is the broker group the client is connected to (the
	// first, sorted, when several are).
	BrokerName string
	ClientID   string
	ClientAddr string
	// Language is the client's language (GO, JAVA, ...).
	Language string
	// Version is the client's RocketMQ version number.
	Version int32
}

// ConsumerConnections is a consumer group's online clients and how they
// consume (mqadmin consumerConnection).
type ConsumerConnections struct {
	Connections []ClientConnection
	// ConsumeType is CONSUME_PASSIVELY (push) or CONSUME_ACTIVELY (pull).
	ConsumeType string
	// MessageModel is CLUSTERING or BROADCASTING.
	MessageModel string
	// ConsumeFromWhere is where a queue without an offset starts.
	ConsumeFromWhere string
	// Subscriptions are the group's subscriptions, sorted by topic.
	Subscriptions []protocol.SubscriptionData
}

// ConsumerConnections returns group's clients connected to any broker
// group (GET_CONSUMER_CONNECTION_LIST, asked of each group's leader
// first), sorted by client id. When no broker group has the group online
// it returns the last broker's error (CONSUMER_NOT_ONLINE).
func (a *Admin) ConsumerConnections(ctx context.Context, group string) (*ConsumerConnections, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: no group", ErrInvalidOption)
	}
	out := &ConsumerConnections{Connections: []ClientConnection{}, Subscriptions: []protocol.SubscriptionData{}}
	subs := map[string]protocol.SubscriptionData{}
	found, err := a.eachConnection(ctx, remoting.ReqGetConsumerConnectionList, map[string]string{"consumerGroup": group},
		func(bd protocol.BrokerData, body []byte) error {
			var cc protocol.ConsumerConnection
			if err := json.Unmarshal(body, &cc); err != nil {
				return err
			}
			out.Connections = mergeConnections(out.Connections, bd.BrokerName, cc.ConnectionSet)
			out.ConsumeType = cmp.Or(out.ConsumeType, cc.ConsumeType)
			out.MessageModel = cmp.Or(out.MessageModel, cc.MessageModel)
			out.ConsumeFromWhere = cmp.Or(out.ConsumeFromWhere, cc.ConsumeFromWhere)
			for topic, sd := range cc.SubscriptionTable {
				subs[topic] = sd
			}
			return nil
		})
	if !found {
		return nil, err
	}
	for _, sd := range subs {
		out.Subscriptions = append(out.Subscriptions, sd)
	}
	slices.SortFunc(out.Subscriptions, func(x, y protocol.SubscriptionData) int { return cmp.Compare(x.Topic, y.Topic) })
	return out, err
}

// ProducerConnections returns the clients of a producer group connected
// to any broker group (GET_PRODUCER_CONNECTION_LIST, mqadmin
// producerConnection), sorted by client id. When no broker group knows
// the group it returns the last broker's error.
func (a *Admin) ProducerConnections(ctx context.Context, group string) ([]ClientConnection, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: no group", ErrInvalidOption)
	}
	out := []ClientConnection{}
	found, err := a.eachConnection(ctx, remoting.ReqGetProducerConnectionList, map[string]string{"producerGroup": group},
		func(bd protocol.BrokerData, body []byte) error {
			var pc protocol.ProducerConnection
			if err := json.Unmarshal(body, &pc); err != nil {
				return err
			}
			out = mergeConnections(out, bd.BrokerName, pc.ConnectionSet)
			return nil
		})
	if !found {
		return nil, err
	}
	return out, err
}

// eachConnection asks every broker group for a connection list and hands
// each SUCCESS body to add. found reports whether some group answered;
// a broker's failure answer (the group is not online there) is skipped
// when another answered, a transport or decoding failure is returned.
func (a *Admin) eachConnection(ctx context.Context, code int16, ext map[string]string,
	add func(bd protocol.BrokerData, body []byte) error) (found bool, err error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return false, err
	}
	var last error = fmt.Errorf("%w: no broker group", ErrBrokerNotFound)
	for _, bd := range groups(ci, "", "") {
		var req *remoting.Command
		resp, addr, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
			req = remoting.NewRequest(code, maps.Clone(ext), nil)
			return req
		})
		var e *Error
		if errors.As(err, &e) {
			last = err
			continue
		}
		if err != nil {
			return found, err
		}
		if err := add(bd, resp.Body); err != nil {
			return found, fmt.Errorf("client: %s at %s: decoding answer: %w", remoting.CodeName(req.Code), addr, err)
		}
		found = true
	}
	if found {
		return true, nil
	}
	return false, last
}

// mergeConnections adds conns (of broker group name) to out, once per
// client id, sorted by client id.
func mergeConnections(out []ClientConnection, name string, conns []protocol.Connection) []ClientConnection {
	for _, c := range conns {
		if slices.ContainsFunc(out, func(o ClientConnection) bool { return o.ClientID == c.ClientID }) {
			continue
		}
		out = append(out, ClientConnection{BrokerName: name, ClientID: c.ClientID, ClientAddr: c.ClientAddr,
			Language: c.Language, Version: c.Version})
	}
	slices.SortFunc(out, func(x, y ClientConnection) int { return cmp.Compare(x.ClientID, y.ClientID) })
	return out
}

// QueueConsumeStats is one queue of a group's consume stats.
type QueueConsumeStats struct {
	Queue MessageQueue
	// BrokerOffset is the queue's max offset.
	BrokerOffset int64
	// ConsumerOffset is the group's committed offset (0 when it has none).
	ConsumerOffset int64
	// LastTimestamp is the store time of the last consumed message, the
	// zero Time if none was.
	LastTimestamp time.Time
	// Lag is BrokerOffset - ConsumerOffset, at least 0.
	Lag int64
}

// ConsumeStats is a consumer group's GET_CONSUME_STATS across broker
// groups (mqadmin consumerProgress -g).
type ConsumeStats struct {
	// Queues are sorted by topic, broker group and queue id.
	Queues []QueueConsumeStats
	// ConsumeTps is the group's messages pulled per second over the last
	// minute, summed over broker groups.
	ConsumeTps float64
	// Lag is the queues' lag summed.
	Lag int64
}

// ConsumeStats returns group's consume stats of topic ("" every topic the
// group has offsets for) from every broker group (GET_CONSUME_STATS). As
// RocketMQ's, a broker leaves out topics the group's online clients do
// not subscribe to.
func (a *Admin) ConsumeStats(ctx context.Context, group, topic string) (*ConsumeStats, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: no group", ErrInvalidOption)
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	ext := map[string]string{"consumerGroup": group}
	if topic != "" {
		ext["topic"] = topic
	}
	out := &ConsumeStats{Queues: []QueueConsumeStats{}}
	for _, bd := range groups(ci, "", "") {
		var req *remoting.Command
		resp, addr, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
			req = remoting.NewRequest(remoting.ReqGetConsumeStats, maps.Clone(ext), nil)
			return req
		})
		if err != nil {
			return out, err
		}
		var cs protocol.ConsumeStats
		if err := protocol.UnmarshalFastJSON(resp.Body, &cs); err != nil {
			return out, fmt.Errorf("client: %s at %s: decoding answer: %w", remoting.CodeName(req.Code), addr, err)
		}
		out.ConsumeTps += cs.ConsumeTps
		for _, q := range protocol.SortedQueues(cs.OffsetTable) {
			w := cs.OffsetTable[q]
			s := QueueConsumeStats{Queue: MessageQueue(q), BrokerOffset: w.BrokerOffset, ConsumerOffset: w.ConsumerOffset,
				Lag: max(0, w.BrokerOffset-w.ConsumerOffset)}
			if w.LastTimestamp > 0 {
				s.LastTimestamp = time.UnixMilli(w.LastTimestamp)
			}
			out.Queues = append(out.Queues, s)
			out.Lag += s.Lag
		}
	}
	slices.SortFunc(out.Queues, func(x, y QueueConsumeStats) int {
		return protocol.CompareQueues(protocol.MessageQueue(x.Queue), protocol.MessageQueue(y.Queue))
	})
	return out, nil
}

// QueueOffset is a group's new offset of one queue.
type QueueOffset struct {
	Queue  MessageQueue
	Offset int64
}

// OffsetReset says where ResetOffset moves a group's offsets of a topic.
type OffsetReset struct {
	Group string
	Topic string
	// Timestamp moves each queue to its first message stored at or after
	// it: a time before the first stored message gives the queue's first
	// offset, one after the last its max offset. The zero Time means the
	// earliest stored message.
	Timestamp time.Time
	// Latest moves each queue to its max offset instead (nothing stored
	// is consumed); Timestamp is ignored.
	Latest bool
	// Progress, if set, is called after each broker group is reset with
	// the queues reset so far and the topic's read queue count.
	Progress func(done, total int, brokerName string)
}

// ResetOffset resets group's offsets of every queue of topic through the
// broker (INVOKE_BROKER_TO_RESET_OFFSET, forced: queues move forward as
// well as back, as mqadmin resetOffsetByTime), on each broker group of the
// topic's route, and returns the new offsets sorted by queue. Each broker
// commits them through raft whether or not consumers are online and tells
// the group's running consumers, which restart their pulls at the new
// offsets. A broker group that fails stops the call; earlier groups keep
// their reset.
func (a *Admin) ResetOffset(ctx context.Context, r OffsetReset) ([]QueueOffset, error) {
	if r.Group == "" || r.Topic == "" {
		return nil, fmt.Errorf("%w: reset needs a group and a topic", ErrInvalidOption)
	}
	ts := int64(0)
	switch {
	case r.Latest:
		ts = -1
	case !r.Timestamp.IsZero():
		ts = max(0, r.Timestamp.UnixMilli())
	}
	rd, err := a.Route(ctx, r.Topic)
	if err != nil {
		return nil, err
	}
	route := newRoute(r.Topic, *rd, 0)
	out := []QueueOffset{}
	for _, bd := range sortedBrokers(rd) {
		ext := map[string]string{"topic": r.Topic, "group": r.Group, "timestamp": strconv.FormatInt(ts, 10), "isForce": "true"}
		table, err := a.invokeReset(ctx, bd, ext)
		if err != nil {
			return out, err
		}
		for _, q := range protocol.SortedQueues(table) {
			out = append(out, QueueOffset{Queue: MessageQueue(q), Offset: table[q]})
		}
		if r.Progress != nil {
			r.Progress(len(out), len(route.ReadQueues), bd.BrokerName)
		}
	}
	return out, nil
}

// sortedBrokers is a route's broker groups sorted by name.
func sortedBrokers(rd *protocol.TopicRouteData) []protocol.BrokerData {
	bds := slices.Clone(rd.BrokerDatas)
	slices.SortFunc(bds, func(x, y protocol.BrokerData) int { return cmp.Compare(x.BrokerName, y.BrokerName) })
	return bds
}

// invokeReset sends INVOKE_BROKER_TO_RESET_OFFSET to bd (its leader
// first; a follower forwards it) and decodes the new offset table.
func (a *Admin) invokeReset(ctx context.Context, bd protocol.BrokerData, ext map[string]string) (protocol.MQMap[int64], error) {
	var req *remoting.Command
	resp, addr, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
		req = remoting.NewRequest(remoting.ReqInvokeBrokerToResetOffset, maps.Clone(ext), nil)
		return req
	})
	if err != nil {
		return nil, err
	}
	var body protocol.ResetOffsetBody
	if err := protocol.UnmarshalFastJSON(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("client: %s at %s: decoding answer: %w", remoting.CodeName(req.Code), addr, err)
	}
	return body.OffsetTable, nil
}

// SkipAccumulated moves group's offsets of every queue of topic to the
// queue's max offset through the broker, so nothing stored now is
// consumed (mqadmin skipAccumulatedMessage); running consumers jump too.
func (a *Admin) SkipAccumulated(ctx context.Context, group, topic string, progress func(done, total int, brokerName string)) ([]QueueOffset, error) {
	return a.ResetOffset(ctx, OffsetReset{Group: group, Topic: topic, Latest: true, Progress: progress})
}

// CloneGroupOffset gives group to, for every queue of topic group from has
// a committed offset on, that offset (mqadmin cloneGroupOffset), and
// returns the offsets set. Each is set through the broker
// (INVOKE_BROKER_TO_RESET_OFFSET for one queue), so running consumers of
// to restart there. progress, if set, is called after each queue.
func (a *Admin) CloneGroupOffset(ctx context.Context, from, to, topic string, progress func(done, total int, q MessageQueue)) ([]QueueOffset, error) {
	if from == "" || to == "" || topic == "" {
		return nil, fmt.Errorf("%w: clone needs a source group, a destination group and a topic", ErrInvalidOption)
	}
	if from == to {
		return nil, fmt.Errorf("%w: source and destination group are both %q", ErrInvalidOption, from)
	}
	src, err := a.ConsumerGroupProgress(ctx, from, topic)
	if err != nil {
		return nil, err
	}
	src = slices.DeleteFunc(src, func(p QueueProgress) bool { return p.ConsumerOffset < 0 })
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	route := &Route{Data: *rd}
	out := []QueueOffset{}
	for _, p := range src {
		bd, ok := route.Broker(p.Queue.BrokerName)
		if !ok {
			return out, fmt.Errorf("%w: %s in the route of %s", ErrBrokerNotFound, p.Queue.BrokerName, topic)
		}
		ext := map[string]string{"topic": topic, "group": to, "isForce": "true",
			"queueId": strconv.Itoa(int(p.Queue.QueueID)), "offset": strconv.FormatInt(p.ConsumerOffset, 10)}
		table, err := a.invokeReset(ctx, bd, ext)
		if err != nil {
			return out, err
		}
		off, ok := table[protocol.MessageQueue(p.Queue)]
		if !ok {
			return out, fmt.Errorf("client: %s did not reset %s/%d for %s", bd.BrokerName, topic, p.Queue.QueueID, to)
		}
		out = append(out, QueueOffset{Queue: p.Queue, Offset: off})
		if progress != nil {
			progress(len(out), len(src), p.Queue)
		}
	}
	return out, nil
}
