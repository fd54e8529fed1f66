package protocol

// Admin bodies of the statistics, connection and offset-reset codes, with
// the field names of RocketMQ's Java classes (the admin tools read them by
// name). Bodies holding an MQMap are written with MarshalFastJSON and read
// with UnmarshalFastJSON.

// TopicOffset is one queue of GET_TOPIC_STATS_INFO (202).
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// TopicStatsTable is GET_TOPIC_STATS_INFO's body.
type TopicStatsTable struct {
	OffsetTable MQMap[TopicOffset] `json:"offsetTable"`
}

// OffsetWrapper is one queue of a consumer group's ConsumeStats.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	PullOffset     int64 `json:"pullOffset"`
	// LastTimestamp is the store time of the last consumed message, 0 if
	// none was.
	LastTimestamp int64 `json:"lastTimestamp"`
}

// ConsumeStats is GET_CONSUME_STATS's (208) body.
type ConsumeStats struct {
	OffsetTable MQMap[OffsetWrapper] `json:"offsetTable"`
	ConsumeTps  float64              `json:"consumeTps"`
}

// Diff is the group's total lag: broker minus consumer offset, summed.
func (c ConsumeStats) Diff() int64 {
	var d int64
	for _, w := range c.OffsetTable {
		d += max(0, w.BrokerOffset-w.ConsumerOffset)
	}
	return d
}

// Connection is one client connection of a group.
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

// ConsumerConnection is GET_CONSUMER_CONNECTION_LIST's (203) body.
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                      `json:"consumeType"`
	MessageModel      string                      `json:"messageModel"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere"`
}

// ProducerConnection is GET_PRODUCER_CONNECTION_LIST's (204) body.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// GroupList is QUERY_TOPIC_CONSUME_BY_WHO's (300) body.
type GroupList struct {
	GroupList []string `json:"groupList"`
}

// QueueTimeSpan is one queue of QUERY_CONSUME_TIME_SPAN (303): store
// times of its first and last message and of the group's progress.
type QueueTimeSpan struct {
	MessageQueue     MessageQueue `json:"messageQueue"`
	MinTimeStamp     int64        `json:"minTimeStamp"`
	MaxTimeStamp     int64        `json:"maxTimeStamp"`
	ConsumeTimeStamp int64        `json:"consumeTimeStamp"`
	// DelayTime is how long the oldest unconsumed message has waited
	// (ms), 0 when the group is caught up.
	DelayTime int64 `json:"delayTime"`
}

// QueryConsumeTimeSpanBody is QUERY_CONSUME_TIME_SPAN's body.
type QueryConsumeTimeSpanBody struct {
	ConsumeTimeSpanSet []QueueTimeSpan `json:"consumeTimeSpanSet"`
}

// BrokerStatsItem is one window of a broker statistic: the count in the
// window, per second, and per call (avgpt).
type BrokerStatsItem struct {
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"`
	Avgpt float64 `json:"avgpt"`
}

// BrokerStatsData is VIEW_BROKER_STATS_DATA's (315) body.
type BrokerStatsData struct {
	StatsMinute BrokerStatsItem `json:"statsMinute"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsDay    BrokerStatsItem `json:"statsDay"`
}

// Broker statistic names VIEW_BROKER_STATS_DATA answers, RocketMQ's, with
// the key each takes.
const (
	StatsTopicPutNums = "TOPIC_PUT_NUMS" // key: topic
	StatsTopicPutSize = "TOPIC_PUT_SIZE" // key: topic
	StatsGroupGetNums = "GROUP_GET_NUMS" // key: topic@group
	StatsGroupGetSize = "GROUP_GET_SIZE" // key: topic@group
	StatsBrokerPut    = "BROKER_PUT_NUMS"
	StatsBrokerGet    = "BROKER_GET_NUMS"
)

// ConsumeStatsList is GET_BROKER_CONSUME_STATS's (317) body: per group,
// the ConsumeStats of each topic it consumes.
type ConsumeStatsList struct {
	ConsumeStatsList  []map[string][]ConsumeStats `json:"consumeStatsList"`
	BrokerAddr        string                      `json:"brokerAddr"`
	TotalDiff         int64                       `json:"totalDiff"`
	TotalInflightDiff int64                       `json:"totalInflightDiff"`
}

// ResetOffsetBody is INVOKE_BROKER_TO_RESET_OFFSET's (222) answer and
// RESET_CONSUMER_CLIENT_OFFSET's (220) request body.
type ResetOffsetBody struct {
	OffsetTable MQMap[int64] `json:"offsetTable"`
}

// ProcessQueueInfo is one queue of a consumer's running info.
type ProcessQueueInfo struct {
	CommitOffset            int64 `json:"commitOffset"`
	CachedMsgMinOffset      int64 `json:"cachedMsgMinOffset"`
	CachedMsgMaxOffset      int64 `json:"cachedMsgMaxOffset"`
	CachedMsgCount          int64 `json:"cachedMsgCount"`
	CachedMsgSizeInMiB      int64 `json:"cachedMsgSizeInMiB"`
	TransactionMsgMinOffset int64 `json:"transactionMsgMinOffset"`
	TransactionMsgMaxOffset int64 `json:"transactionMsgMaxOffset"`
	TransactionMsgCount     int64 `json:"transactionMsgCount"`
	Locked                  bool  `json:"locked"`
	TryUnlockTimes          int64 `json:"tryUnlockTimes"`
	LastLockTimestamp       int64 `json:"lastLockTimestamp"`
	Droped                  bool  `json:"droped"` // sic: the Java field's name
	LastPullTimestamp       int64 `json:"lastPullTimestamp"`
	LastConsumeTimestamp    int64 `json:"lastConsumeTimestamp"`
}

// ConsumeStatus is a consumer's per-topic rates in its running info.
type ConsumeStatus struct {
	PullRT            float64 `json:"pullRT"`
	PullTPS           float64 `json:"pullTPS"`
	ConsumeRT         float64 `json:"consumeRT"`
	ConsumeOKTPS      float64 `json:"consumeOKTPS"`
	ConsumeFailedTPS  float64 `json:"consumeFailedTPS"`
	ConsumeFailedMsgs int64   `json:"consumeFailedMsgs"`
}

// ConsumerRunningInfo is GET_CONSUMER_RUNNING_INFO's (307) body, which
// the consumer itself answers (the broker relays it).
type ConsumerRunningInfo struct {
	Properties      map[string]string        `json:"properties"`
	SubscriptionSet []SubscriptionData       `json:"subscriptionSet"`
	MQTable         MQMap[ProcessQueueInfo]  `json:"mqTable"`
	StatusTable     map[string]ConsumeStatus `json:"statusTable"`
	Jstack          string                   `json:"jstack"`
}

// Running-info property names, RocketMQ's.
const (
	PropConsumeType            = "PROP_CONSUME_TYPE"
	PropConsumeOrderly         = "PROP_CONSUMEORDERLY"
	PropClientVersion          = "PROP_CLIENT_VERSION"
	PropConsumerStartTimestamp = "PROP_CONSUMER_START_TIMESTAMP"
	PropNamesrvAddr            = "PROP_NAMESERVER_ADDR"
	PropThreadPoolCoreSize     = "PROP_THREADPOOL_CORE_SIZE"
)
