package protocol

// Name-server bodies: what REGISTER_BROKER carries and what
// GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO and the topic-list codes
// answer, as RocketMQ's RegisterBrokerBody, TopicRouteData, ClusterInfo
// and TopicList.

// TopicConfig is a broker's topic as RocketMQ's TopicConfig serialises it
// (REGISTER_BROKER bodies, GET_ALL_TOPIC_CONFIG).
type TopicConfig struct {
	TopicName       string `json:"topicName"`
	ReadQueueNums   int32  `json:"readQueueNums"`
	WriteQueueNums  int32  `json:"writeQueueNums"`
	Perm            int32  `json:"perm"`
	TopicFilterType string `json:"topicFilterType,omitempty"`
	TopicSysFlag    int32  `json:"topicSysFlag"`
	Order           bool   `json:"order"`
}

// Topic filter types, as RocketMQ's TopicFilterType.
const (
	FilterSingleTag = "SINGLE_TAG"
	FilterMultiTag  = "MULTI_TAG"
)

// DataVersion orders a broker's successive tables.
type DataVersion struct {
	Timestamp int64 `json:"timestamp"`
	Counter   int64 `json:"counter"`
}

// TopicConfigWrapper is RocketMQ's TopicConfigSerializeWrapper.
type TopicConfigWrapper struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

// RegisterBrokerBody is the JSON body of REGISTER_BROKER.
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string           `json:"filterServerList"`
}

// QueueData is one broker group's queues of a topic in a route.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// BrokerData is one broker group's addresses by brokerId (0 = leader).
type BrokerData struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// TopicRouteData is the GET_ROUTEINFO_BY_TOPIC answer.
type TopicRouteData struct {
	OrderTopicConf    string              `json:"orderTopicConf"`
	QueueDatas        []QueueData         `json:"queueDatas"`
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
}

// ClusterInfo is the GET_BROKER_CLUSTER_INFO answer.
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

// TopicList is the GET_ALL_TOPIC_LIST_FROM_NAMESERVER answer.
type TopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}
