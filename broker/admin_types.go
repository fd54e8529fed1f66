package broker

// JSON bodies of the admin and registration requests, shaped as RocketMQ's
// TopicConfig, TopicConfigSerializeWrapper, RegisterBrokerBody,
// SubscriptionGroupConfig and SubscriptionGroupWrapper serialise them.

import (
	"time"

	"github.com/raftmq/raftmq/dledger"
)

// topicConfigJSON is RocketMQ's TopicConfig.
type topicConfigJSON struct {
	TopicName       string `json:"topicName"`
	ReadQueueNums   int32  `json:"readQueueNums"`
	WriteQueueNums  int32  `json:"writeQueueNums"`
	Perm            int32  `json:"perm"`
	TopicFilterType string `json:"topicFilterType"`
	TopicSysFlag    int32  `json:"topicSysFlag"`
	Order           bool   `json:"order"`
}

func toTopicJSON(t dledger.TopicConfig) topicConfigJSON {
	filter := "SINGLE_TAG"
	if t.FilterType == 1 {
		filter = "MULTI_TAG"
	}
	return topicConfigJSON{
		TopicName: t.Name, ReadQueueNums: t.ReadQueueNums, WriteQueueNums: t.WriteQueueNums,
		Perm: t.Perm, TopicFilterType: filter, TopicSysFlag: t.TopicSysFlag, Order: t.Order,
	}
}

// dataVersionJSON is RocketMQ's DataVersion.
type dataVersionJSON struct {
	Timestamp int64 `json:"timestamp"`
	Counter   int64 `json:"counter"`
}

// dataVersion versions this node's tables by the raft index it applied,
// which orders them the same way on every replica.
func (b *Broker) dataVersion() dataVersionJSON {
	return dataVersionJSON{Timestamp: time.Now().UnixMilli(), Counter: int64(b.node.Metadata().AppliedIndex())}
}

// topicConfigWrapper is RocketMQ's TopicConfigSerializeWrapper.
type topicConfigWrapper struct {
	TopicConfigTable map[string]topicConfigJSON `json:"topicConfigTable"`
	DataVersion      dataVersionJSON            `json:"dataVersion"`
}

// registerBrokerBody is RocketMQ's RegisterBrokerBody.
type registerBrokerBody struct {
	TopicConfigSerializeWrapper topicConfigWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string           `json:"filterServerList"`
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
	DataVersion            dataVersionJSON                  `json:"dataVersion"`
}
