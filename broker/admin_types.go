package broker

// The JSON tables a node answers and registers: RocketMQ's
// TopicConfigSerializeWrapper and SubscriptionGroupWrapper, versioned by
// the raft index this node applied.

import (
	"time"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/protocol"
)

// tables builds the wire tables of this node's applied metadata.
type tables struct {
	node *dledger.Node
	// perm is the group's brokerPermission, masking every topic's perm in
	// registrations and listings (nil: read and write).
	perm func() int32
	// autoCreate adds TBW102 to the topic table (producers look its route
	// up).
	autoCreate bool
}

// dataVersion versions this node's tables by the raft index it applied,
// which orders them the same way on every replica.
func (t *tables) dataVersion() protocol.DataVersion {
	return protocol.DataVersion{Timestamp: time.Now().UnixMilli(), Counter: int64(t.node.AppliedIndex())}
}

// topicWrapper is this node's TopicConfigSerializeWrapper: topics plus
// TBW102 when auto-creation is on.
func (t *tables) topicWrapper(topics []meta.TopicConfig) protocol.TopicConfigWrapper {
	table := make(map[string]protocol.TopicConfig, len(topics)+1)
	mask := int32(protocol.PermAll)
	if t.perm != nil {
		mask = t.perm() | protocol.PermInherit
	}
	for _, tc := range topics {
		tc.Perm &= mask
		table[tc.Name] = toTopicJSON(tc)
	}
	if t.autoCreate {
		d := defaultTopicConfig()
		d.Perm &= mask
		table[protocol.DefaultTopic] = toTopicJSON(d)
	}
	return protocol.TopicConfigWrapper{TopicConfigTable: table, DataVersion: t.dataVersion()}
}

func toTopicJSON(t meta.TopicConfig) protocol.TopicConfig {
	return protocol.TopicConfig{
		TopicName: t.Name, ReadQueueNums: t.ReadQueueNums, WriteQueueNums: t.WriteQueueNums,
		Perm: t.Perm, TopicFilterType: filterTypeName(t.FilterType), TopicSysFlag: t.TopicSysFlag, Order: t.Order,
	}
}

func toGroupJSON(g meta.SubscriptionGroupConfig) protocol.SubscriptionGroupConfig {
	return protocol.SubscriptionGroupConfig{
		GroupName: g.GroupName, ConsumeEnable: g.ConsumeEnable, ConsumeFromMinEnable: g.ConsumeFromMinEnable,
		ConsumeBroadcastEnable: g.ConsumeBroadcastEnable, RetryQueueNums: g.RetryQueueNums,
		RetryMaxTimes: g.RetryMaxTimes, BrokerID: g.BrokerID, WhichBrokerWhenConsumeSlowly: g.WhichBrokerWhenConsumeSlowly,
		NotifyConsumerIdsChangedEnable: g.NotifyConsumerIdsChangedEnable,
	}
}

func fromGroupJSON(g protocol.SubscriptionGroupConfig) meta.SubscriptionGroupConfig {
	return meta.SubscriptionGroupConfig{
		GroupName: g.GroupName, ConsumeEnable: g.ConsumeEnable, ConsumeFromMinEnable: g.ConsumeFromMinEnable,
		ConsumeBroadcastEnable: g.ConsumeBroadcastEnable, RetryQueueNums: g.RetryQueueNums,
		RetryMaxTimes: g.RetryMaxTimes, BrokerID: g.BrokerID, WhichBrokerWhenConsumeSlowly: g.WhichBrokerWhenConsumeSlowly,
		NotifyConsumerIdsChangedEnable: g.NotifyConsumerIdsChangedEnable,
	}
}
