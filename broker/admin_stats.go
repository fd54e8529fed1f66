package broker

// Admin: statistics, as RocketMQ's AdminBrokerProcessor answers them for
// mqadmin, rocketmq-dashboard and rocketmq-exporter.
//
//   - GET_TOPIC_STATS_INFO (202, ext topic): TopicStatsTable, per write
//     queue min/max offset and the store time of its last message.
//   - GET_CONSUME_STATS (208, ext consumerGroup, topic optional):
//     ConsumeStats, per read queue of each topic the group has offsets for
//     (or the one named) broker offset, consumer offset and the store time
//     of the last consumed message; consumeTps over the last minute.
//   - QUERY_TOPIC_CONSUME_BY_WHO (300, ext topic): GroupList, the groups
//     with offsets on it or connected clients subscribing to it.
//   - QUERY_CONSUME_TIME_SPAN (303, ext topic, group): per queue the store
//     times of the first, last and last consumed message, and how long the
//     oldest unconsumed one has waited.
//   - VIEW_BROKER_STATS_DATA (315, ext statsName, statsKey): the minute,
//     hour and day windows of one statistic (stats.go).
//   - GET_BROKER_CONSUME_STATS (317, ext isOrder): ConsumeStatsList, every
//     group's ConsumeStats per topic and the total lag.
//
// Offsets are this node's: applied ones, overlaid with those still
// pending here, as GET_ALL_CONSUMER_OFFSET. Bodies with queue-keyed maps
// are written the way fastjson writes them (protocol.MarshalFastJSON).

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

// statsAdmin serves the statistics codes.
type statsAdmin struct {
	rep       *replica
	store     *store.Store
	meta      *meta.State
	committer *offsetCommitter
	consumers *consumerManager
	stats     *brokerStats
}

func (a *statsAdmin) register(m mux) {
	m.HandleFunc(remoting.ReqGetTopicStatsInfo, a.topicStats)
	m.HandleFunc(remoting.ReqGetConsumeStats, a.consumeStatsOf)
	m.HandleFunc(remoting.ReqQueryTopicConsumeByWho, a.consumeByWho)
	m.HandleFunc(remoting.ReqQueryConsumeTimeSpan, a.consumeTimeSpan)
	m.HandleFunc(remoting.ReqViewBrokerStatsData, a.viewStats)
	m.HandleFunc(remoting.ReqGetBrokerConsumeStats, a.brokerConsumeStats)
}

// fastJSONResponse is a SUCCESS answer with v written as fastjson would.
func fastJSONResponse(req *remoting.Command, v any) *remoting.Command {
	body, err := protocol.MarshalFastJSON(v)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "encoding answer: %v", err)
	}
	resp := okResponse(req)
	resp.Body = body
	return resp
}

func (a *statsAdmin) queue(topic string, id int32) protocol.MessageQueue {
	return protocol.MessageQueue{Topic: topic, BrokerName: a.rep.group, QueueID: id}
}

// lastStoreTime is the store time of the message before offset, 0 if
// there is none.
func (a *statsAdmin) lastStoreTime(topic string, id int32, offset int64) int64 {
	if offset <= 0 {
		return 0
	}
	return max(0, a.store.StoreTimeAt(topic, id, offset-1))
}

func (a *statsAdmin) topicStats(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic := req.ExtFields["topic"]
	tc, ok := a.meta.Topic(topic)
	if !ok {
		return errResponse(req, remoting.ResTopicNotExist, "topic[%s] not exist", topic)
	}
	table := protocol.MQMap[protocol.TopicOffset]{}
	for i := range tc.WriteQueueNums {
		maxOff := a.store.MaxOffset(topic, i)
		table[a.queue(topic, i)] = protocol.TopicOffset{MinOffset: a.store.MinOffset(topic, i), MaxOffset: maxOff,
			LastUpdateTimestamp: a.lastStoreTime(topic, i, maxOff)}
	}
	return fastJSONResponse(req, protocol.TopicStatsTable{OffsetTable: table})
}

// offset is group's offset of a queue here, -1 if it has none.
func (a *statsAdmin) offset(k meta.OffsetKey) int64 {
	if off, ok := a.committer.lookup(k); ok {
		return off
	}
	if off, ok := a.meta.ConsumerOffset(k); ok {
		return off
	}
	return -1
}

// topicsOf returns the topics group has offsets for here, sorted.
func (a *statsAdmin) topicsOf(group string) []string {
	set := map[string]bool{}
	for _, o := range a.meta.ConsumerOffsets(group) {
		set[o.Topic] = true
	}
	for k := range a.committer.snapshot() {
		if k.Group == group {
			set[k.Topic] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// consumeStats is group's ConsumeStats of topics, skipping topics that
// do not exist, that orderOnly excludes, and (as RocketMQ) those the
// group's connected clients no longer subscribe to.
func (a *statsAdmin) consumeStats(group string, topics []string, orderOnly bool) []protocol.ConsumeStats {
	subscribed := a.consumers.topicsOf(group)
	var out []protocol.ConsumeStats
	for _, topic := range topics {
		tc, ok := a.meta.Topic(topic)
		if !ok || (orderOnly && !tc.Order) {
			continue
		}
		if len(subscribed) > 0 && !slices.Contains(subscribed, topic) {
			continue
		}
		cs := protocol.ConsumeStats{OffsetTable: protocol.MQMap[protocol.OffsetWrapper]{},
			ConsumeTps: a.stats.minuteTps(protocol.StatsGroupGetNums, topic+"@"+group)}
		for i := range tc.ReadQueueNums {
			co := max(0, a.offset(meta.OffsetKey{Group: group, Topic: topic, QueueID: i}))
			cs.OffsetTable[a.queue(topic, i)] = protocol.OffsetWrapper{BrokerOffset: a.store.MaxOffset(topic, i),
				ConsumerOffset: co, PullOffset: co, LastTimestamp: a.lastStoreTime(topic, i, co)}
		}
		out = append(out, cs)
	}
	return out
}

func (a *statsAdmin) consumeStatsOf(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	group := req.ExtFields["consumerGroup"]
	if group == "" {
		return errResponse(req, remoting.ResSystemError, "the custom field <consumerGroup> is null")
	}
	topics := a.topicsOf(group)
	if t := req.ExtFields["topic"]; t != "" {
		topics = []string{t}
	}
	merged := protocol.ConsumeStats{OffsetTable: protocol.MQMap[protocol.OffsetWrapper]{}}
	for _, cs := range a.consumeStats(group, topics, false) {
		maps.Copy(merged.OffsetTable, cs.OffsetTable)
		merged.ConsumeTps += cs.ConsumeTps
	}
	return fastJSONResponse(req, merged)
}

func (a *statsAdmin) consumeByWho(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic := req.ExtFields["topic"]
	if topic == "" {
		return errResponse(req, remoting.ResSystemError, "the custom field <topic> is null")
	}
	set := map[string]bool{}
	for _, g := range a.consumers.groupsOf(topic) {
		set[g] = true
	}
	for _, o := range a.meta.AllConsumerOffsets() {
		if o.Topic == topic {
			set[o.Group] = true
		}
	}
	for k := range a.committer.snapshot() {
		if k.Topic == topic {
			set[k.Group] = true
		}
	}
	return jsonResponse(req, protocol.GroupList{GroupList: slices.Sorted(maps.Keys(set))})
}

func (a *statsAdmin) consumeTimeSpan(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, group := req.ExtFields["topic"], req.ExtFields["group"]
	if topic == "" || group == "" {
		return errResponse(req, remoting.ResSystemError, "the custom fields <topic> and <group> are required")
	}
	tc, ok := a.meta.Topic(topic)
	if !ok {
		return errResponse(req, remoting.ResTopicNotExist, "topic[%s] not exist", topic)
	}
	body := protocol.QueryConsumeTimeSpanBody{ConsumeTimeSpanSet: []protocol.QueueTimeSpan{}}
	now := time.Now().UnixMilli()
	for i := range tc.WriteQueueNums {
		maxOff := a.store.MaxOffset(topic, i)
		span := protocol.QueueTimeSpan{MessageQueue: a.queue(topic, i),
			MinTimeStamp: max(0, a.store.EarliestMessageTime(topic, i)), MaxTimeStamp: a.lastStoreTime(topic, i, maxOff)}
		co := a.offset(meta.OffsetKey{Group: group, Topic: topic, QueueID: i})
		span.ConsumeTimeStamp = span.MinTimeStamp
		if co > 0 {
			span.ConsumeTimeStamp = a.lastStoreTime(topic, i, co)
		}
		if next := a.store.StoreTimeAt(topic, i, max(co, 0)); co < maxOff && next > 0 {
			span.DelayTime = max(0, now-next)
		}
		body.ConsumeTimeSpanSet = append(body.ConsumeTimeSpanSet, span)
	}
	return jsonResponse(req, body)
}

func (a *statsAdmin) viewStats(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	name, key := req.ExtFields["statsName"], req.ExtFields["statsKey"]
	d, ok := a.stats.get(name, key)
	if !ok {
		return errResponse(req, remoting.ResSystemError, "The stats <%s> <%s> not exist", name, key)
	}
	return jsonResponse(req, d)
}

func (a *statsAdmin) brokerConsumeStats(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	orderOnly := strings.EqualFold(req.ExtFields["isOrder"], "true")
	groups := map[string]bool{}
	for _, g := range a.meta.SubscriptionGroups() {
		groups[g.GroupName] = true
	}
	for _, o := range a.meta.AllConsumerOffsets() {
		groups[o.Group] = true
	}
	for _, g := range a.consumers.online() {
		groups[g] = true
	}
	out := protocol.ConsumeStatsList{ConsumeStatsList: []map[string][]protocol.ConsumeStats{}, BrokerAddr: a.rep.self.RemotingAddr}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		stats := a.consumeStats(g, a.topicsOf(g), orderOnly)
		if len(stats) == 0 {
			continue
		}
		for _, cs := range stats {
			out.TotalDiff += cs.Diff()
		}
		out.ConsumeStatsList = append(out.ConsumeStatsList, map[string][]protocol.ConsumeStats{g: stats})
	}
	return fastJSONResponse(req, out)
}
