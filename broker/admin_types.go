package broker

// JSON bodies of the admin and registration requests, shaped as RocketMQ's
// TopicConfig, TopicConfigSerializeWrapper, RegisterBrokerBody,
// SubscriptionGroupConfig and SubscriptionGroupWrapper serialise them.

import (
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/protocol"
)

// The topic and registration bodies are the name server's wire types: the
// broker writes exactly what namesrv reads.

func toTopicJSON(t dledger.TopicConfig) protocol.TopicConfig {
	filter := "SINGLE_TAG"
	if t.FilterType == 1 {
		filter = "MULTI_TAG"
	}
	return protocol.TopicConfig{
		TopicName: t.Name, ReadQueueNums: t.ReadQueueNums, WriteQueueNums: t.WriteQueueNums,
		Perm: t.Perm, TopicFilterType: filter, TopicSysFlag: t.TopicSysFlag, Order: t.Order,
	}
}

// dataVersion versions this node's tables by the raft index it applied,
// which orders them the same way on every replica.
func (b *Broker) dataVersion() protocol.DataVersion {
	return protocol.DataVersion{Timestamp: time.Now().UnixMilli(), Counter: int64(b.node.Metadata().AppliedIndex())}
}

// topicWrapper is this node's TopicConfigSerializeWrapper: topics plus
// TBW102 when auto-creation is on (producers look its route up).
func (b *Broker) topicWrapper(topics []dledger.TopicConfig) protocol.TopicConfigWrapper {
	table := make(map[string]protocol.TopicConfig, len(topics)+1)
	for _, t := range topics {
		table[t.Name] = toTopicJSON(t)
	}
	if b.cfg.AutoCreateTopic {
		table[DefaultTopic] = toTopicJSON(defaultTopicConfig())
	}
	return protocol.TopicConfigWrapper{TopicConfigTable: table, DataVersion: b.dataVersion()}
}

// subscriptionGroupJSON is RocketMQ's SubscriptionGroupConfig.
type subscriptionGroupJSON struct {
	GroupName                      string `json:"groupName"`
	ConsumeEnable                  bool   `json:"consumeEnable"`
	ConsumeFromMinEnable           bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool   `json:"consumeBroadcastEnable"`
	RetryQueueNums                 int32  `json:"retryQueueNums"`
	RetryMaxTimes                  int32  `json:"retryMaxTimes"`
	BrokerID                       int64  `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64  `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool   `json:"notifyConsumerIdsChangedEnable"`
}

// defaultSubscriptionGroupJSON has RocketMQ's field defaults, so a body
// that omits a field gets what a Java broker would give it.
func defaultSubscriptionGroupJSON() subscriptionGroupJSON {
	return subscriptionGroupJSON{
		ConsumeEnable: true, ConsumeFromMinEnable: true, ConsumeBroadcastEnable: true,
		RetryQueueNums: 1, RetryMaxTimes: 16, BrokerID: 0, WhichBrokerWhenConsumeSlowly: 1,
		NotifyConsumerIdsChangedEnable: true,
	}
}

func toGroupJSON(g dledger.SubscriptionGroupConfig) subscriptionGroupJSON {
	return subscriptionGroupJSON{
		GroupName: g.GroupName, ConsumeEnable: g.ConsumeEnable, ConsumeFromMinEnable: g.ConsumeFromMinEnable,
		ConsumeBroadcastEnable: g.ConsumeBroadcastEnable, RetryQueueNums: g.RetryQueueNums,
		RetryMaxTimes: g.RetryMaxTimes, BrokerID: g.BrokerID, WhichBrokerWhenConsumeSlowly: g.WhichBrokerWhenConsumeSlowly,
		NotifyConsumerIdsChangedEnable: g.NotifyConsumerIdsChangedEnable,
	}
}

func (g subscriptionGroupJSON) config() dledger.SubscriptionGroupConfig {
	return dledger.SubscriptionGroupConfig{
		GroupName: g.GroupName, ConsumeEnable: g.ConsumeEnable, ConsumeFromMinEnable: g.ConsumeFromMinEnable,
		ConsumeBroadcastEnable: g.ConsumeBroadcastEnable, RetryQueueNums: g.RetryQueueNums,
		RetryMaxTimes: g.RetryMaxTimes, BrokerID: g.BrokerID, WhichBrokerWhenConsumeSlowly: g.WhichBrokerWhenConsumeSlowly,
		NotifyConsumerIdsChangedEnable: g.NotifyConsumerIdsChangedEnable,
	}
}

// subscriptionGroupWrapper is RocketMQ's SubscriptionGroupWrapper.
type subscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]subscriptionGroupJSON `json:"subscriptionGroupTable"`
	DataVersion            protocol.DataVersion             `json:"dataVersion"`
}
