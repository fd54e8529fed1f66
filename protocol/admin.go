package protocol

// Admin bodies: subscription groups, runtime tables and raftmq's own
// membership answer.

// SubscriptionGroupConfig is RocketMQ's SubscriptionGroupConfig
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP bodies,
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG tables).
type SubscriptionGroupConfig struct {
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

// DefaultMaxReconsumeTimes is RocketMQ's default retry budget of a group.
const DefaultMaxReconsumeTimes = 16

// DefaultSubscriptionGroupConfig has RocketMQ's field defaults, so a body
// that omits a field decodes to what a Java broker would give it.
func DefaultSubscriptionGroupConfig() SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		ConsumeEnable: true, ConsumeFromMinEnable: true, ConsumeBroadcastEnable: true,
		RetryQueueNums: 1, RetryMaxTimes: DefaultMaxReconsumeTimes, BrokerID: 0, WhichBrokerWhenConsumeSlowly: 1,
		NotifyConsumerIdsChangedEnable: true,
	}
}

// SubscriptionGroupWrapper is RocketMQ's SubscriptionGroupWrapper.
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            DataVersion                        `json:"dataVersion"`
}

// KVTable is RocketMQ's KVTable (GET_BROKER_RUNTIME_INFO): every value a
// string.
type KVTable struct {
	Table map[string]string `json:"table"`
}

// RaftMember is one entry of the RAFTMQ_RAFT_MEMBERS answer (raftmq's own
// code 9100): a voting member of a broker group's raft configuration.
type RaftMember struct {
	ID           string `json:"id"`
	RaftAddr     string `json:"raftAddr"`
	RemotingAddr string `json:"remotingAddr,omitempty"`
	Leader       bool   `json:"leader"`
	// Nonvoter marks a node added but not yet promoted: it is still
	// catching up and does not count towards the quorum.
	Nonvoter bool `json:"nonvoter,omitempty"`
}

// ConsumerOffsetWrapper is GET_ALL_CONSUMER_OFFSET's body (RocketMQ's
// ConsumerOffsetSerializeWrapper): offsets by "topic@group", then queue id.
type ConsumerOffsetWrapper struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
}
