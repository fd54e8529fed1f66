package remoting

import "strconv"

// Request codes (RocketMQ 4.x RequestCode). Frozen: they are on the wire and
// must match Apache RocketMQ. Request and response codes are separate number
// spaces: 10 is SEND_MESSAGE as a request and FLUSH_DISK_TIMEOUT as a
// response.
const (
	ReqSendMessage                      int16 = 10
	ReqPullMessage                      int16 = 11
	ReqQueryMessage                     int16 = 12
	ReqQueryBrokerOffset                int16 = 13
	ReqQueryConsumerOffset              int16 = 14
	ReqUpdateConsumerOffset             int16 = 15
	ReqUpdateAndCreateTopic             int16 = 17
	ReqGetAllTopicConfig                int16 = 21
	ReqUpdateBrokerConfig               int16 = 25
	ReqGetBrokerConfig                  int16 = 26
	ReqGetBrokerRuntimeInfo             int16 = 28
	ReqSearchOffsetByTimestamp          int16 = 29
	ReqGetMaxOffset                     int16 = 30
	ReqGetMinOffset                     int16 = 31
	ReqGetEarliestMsgStoreTime          int16 = 32
	ReqViewMessageByID                  int16 = 33
	ReqHeartBeat                        int16 = 34
	ReqUnregisterClient                 int16 = 35
	ReqConsumerSendMsgBack              int16 = 36
	ReqEndTransaction                   int16 = 37
	ReqGetConsumerListByGroup           int16 = 38
	ReqCheckTransactionState            int16 = 39 // broker → producer
	ReqNotifyConsumerIDsChanged         int16 = 40 // broker → consumer
	ReqLockBatchMQ                      int16 = 41
	ReqUnlockBatchMQ                    int16 = 42
	ReqGetAllConsumerOffset             int16 = 43
	ReqGetAllDelayOffset                int16 = 45
	ReqUpdateAndCreateACLConfig         int16 = 50
	ReqDeleteACLConfig                  int16 = 51
	ReqGetBrokerClusterACLInfo          int16 = 52
	ReqUpdateGlobalWhiteAddrsConfig     int16 = 53
	ReqGetBrokerClusterACLConfig        int16 = 54
	ReqPutKVConfig                      int16 = 100
	ReqGetKVConfig                      int16 = 101
	ReqDeleteKVConfig                   int16 = 102
	ReqRegisterBroker                   int16 = 103
	ReqUnregisterBroker                 int16 = 104
	ReqGetRouteInfoByTopic              int16 = 105
	ReqGetBrokerClusterInfo             int16 = 106
	ReqUpdateAndCreateSubscriptionGroup int16 = 200
	ReqGetAllSubscriptionGroupConfig    int16 = 201
	ReqGetTopicStatsInfo                int16 = 202
	ReqGetConsumerConnectionList        int16 = 203
	ReqGetProducerConnectionList        int16 = 204
	ReqWipeWritePermOfBroker            int16 = 205
	ReqGetAllTopicListFromNameServer    int16 = 206
	ReqDeleteSubscriptionGroup          int16 = 207
	ReqGetConsumeStats                  int16 = 208
	ReqDeleteTopicInBroker              int16 = 215
	ReqDeleteTopicInNamesrv             int16 = 216
	ReqResetConsumerClientOffset        int16 = 220 // broker → consumer
	ReqGetConsumerStatusFromClient      int16 = 221 // broker → consumer
	ReqInvokeBrokerToResetOffset        int16 = 222
	ReqInvokeBrokerToGetConsumerStatus  int16 = 223
	ReqGetTopicsByCluster               int16 = 224
	ReqQueryTopicConsumeByWho           int16 = 300
	ReqQueryConsumeTimeSpan             int16 = 303
	ReqGetConsumerRunningInfo           int16 = 307 // admin → broker → consumer
	ReqConsumeMessageDirectly           int16 = 309 // broker → consumer
	ReqSendMessageV2                    int16 = 310
	ReqViewBrokerStatsData              int16 = 315
	ReqGetBrokerConsumeStats            int16 = 317
	ReqSendBatchMessage                 int16 = 320
	ReqQueryConsumeQueue                int16 = 321
	ReqQueryDataVersion                 int16 = 322
	ReqSendReplyMessage                 int16 = 324
	ReqSendReplyMessageV2               int16 = 325
	ReqAddWritePermOfBroker             int16 = 327
	ReqPushReplyMessageToClient         int16 = 326 // broker → requester

	// raftmq's own admin codes (not in RocketMQ): Raft membership and
	// leadership of a broker group. RocketMQ brokers answer them
	// REQUEST_CODE_NOT_SUPPORTED.
	ReqRaftMembers            int16 = 9100
	ReqRaftAddVoter           int16 = 9101
	ReqRaftRemoveServer       int16 = 9102
	ReqRaftTransferLeadership int16 = 9103
	// ReqRaftSnapshot makes the node it is sent to take a raft snapshot
	// now (each node snapshots its own state; not forwarded).
	ReqRaftSnapshot int16 = 9104
	// ReqACLSeed carries a node's --acl file to the leader (raftmq).
	ReqACLSeed int16 = 9110
	// ReqPing is a liveness probe (raftmq): every connection answers it
	// SUCCESS from its read loop, without a handler (liveness.go).
	ReqPing int16 = 9120
)

// Response codes (RocketMQ 4.x ResponseCode). Frozen.
const (
	ResSuccess                        int16 = 0
	ResSystemError                    int16 = 1
	ResSystemBusy                     int16 = 2
	ResRequestCodeNotSupported        int16 = 3
	ResTransactionFailed              int16 = 4
	ResFlushDiskTimeout               int16 = 10
	ResSlaveNotAvailable              int16 = 11
	ResFlushSlaveTimeout              int16 = 12
	ResMessageIllegal                 int16 = 13
	ResServiceNotAvailable            int16 = 14
	ResVersionNotSupported            int16 = 15
	ResNoPermission                   int16 = 16
	ResTopicNotExist                  int16 = 17
	ResTopicExistAlready              int16 = 18
	ResPullNotFound                   int16 = 19
	ResPullRetryImmediately           int16 = 20
	ResPullOffsetMoved                int16 = 21
	ResQueryNotFound                  int16 = 22
	ResSubscriptionParseFailed        int16 = 23
	ResSubscriptionNotExist           int16 = 24
	ResSubscriptionNotLatest          int16 = 25
	ResSubscriptionGroupNotExist      int16 = 26
	ResFilterDataNotExist             int16 = 27
	ResFilterDataNotLatest            int16 = 28
	ResConsumerNotOnline              int16 = 206
	ResConsumeMsgTimeout              int16 = 207
	ResNoMessage                      int16 = 208
	ResUpdateAndCreateACLConfigFailed int16 = 209
	ResDeleteACLConfigFailed          int16 = 210
	ResUpdateGlobalWhiteAddrsFailed   int16 = 211
)

var requestCodeNames = map[int16]string{
	ReqSendMessage:                      "SEND_MESSAGE",
	ReqPullMessage:                      "PULL_MESSAGE",
	ReqQueryMessage:                     "QUERY_MESSAGE",
	ReqQueryBrokerOffset:                "QUERY_BROKER_OFFSET",
	ReqQueryConsumerOffset:              "QUERY_CONSUMER_OFFSET",
	ReqUpdateConsumerOffset:             "UPDATE_CONSUMER_OFFSET",
	ReqUpdateAndCreateTopic:             "UPDATE_AND_CREATE_TOPIC",
	ReqGetAllTopicConfig:                "GET_ALL_TOPIC_CONFIG",
	ReqUpdateBrokerConfig:               "UPDATE_BROKER_CONFIG",
	ReqGetBrokerConfig:                  "GET_BROKER_CONFIG",
	ReqGetBrokerRuntimeInfo:             "GET_BROKER_RUNTIME_INFO",
	ReqSearchOffsetByTimestamp:          "SEARCH_OFFSET_BY_TIMESTAMP",
	ReqGetMaxOffset:                     "GET_MAX_OFFSET",
	ReqGetMinOffset:                     "GET_MIN_OFFSET",
	ReqGetEarliestMsgStoreTime:          "GET_EARLIEST_MSG_STORETIME",
	ReqViewMessageByID:                  "VIEW_MESSAGE_BY_ID",
	ReqHeartBeat:                        "HEART_BEAT",
	ReqUnregisterClient:                 "UNREGISTER_CLIENT",
	ReqConsumerSendMsgBack:              "CONSUMER_SEND_MSG_BACK",
	ReqEndTransaction:                   "END_TRANSACTION",
	ReqGetConsumerListByGroup:           "GET_CONSUMER_LIST_BY_GROUP",
	ReqCheckTransactionState:            "CHECK_TRANSACTION_STATE",
	ReqNotifyConsumerIDsChanged:         "NOTIFY_CONSUMER_IDS_CHANGED",
	ReqLockBatchMQ:                      "LOCK_BATCH_MQ",
	ReqUnlockBatchMQ:                    "UNLOCK_BATCH_MQ",
	ReqGetAllConsumerOffset:             "GET_ALL_CONSUMER_OFFSET",
	ReqGetAllDelayOffset:                "GET_ALL_DELAY_OFFSET",
	ReqUpdateAndCreateACLConfig:         "UPDATE_AND_CREATE_ACL_CONFIG",
	ReqDeleteACLConfig:                  "DELETE_ACL_CONFIG",
	ReqGetBrokerClusterACLInfo:          "GET_BROKER_CLUSTER_ACL_INFO",
	ReqUpdateGlobalWhiteAddrsConfig:     "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG",
	ReqGetBrokerClusterACLConfig:        "GET_BROKER_CLUSTER_ACL_CONFIG",
	ReqPutKVConfig:                      "PUT_KV_CONFIG",
	ReqGetKVConfig:                      "GET_KV_CONFIG",
	ReqDeleteKVConfig:                   "DELETE_KV_CONFIG",
	ReqRegisterBroker:                   "REGISTER_BROKER",
	ReqUnregisterBroker:                 "UNREGISTER_BROKER",
	ReqGetRouteInfoByTopic:              "GET_ROUTEINFO_BY_TOPIC",
	ReqGetBrokerClusterInfo:             "GET_BROKER_CLUSTER_INFO",
	ReqUpdateAndCreateSubscriptionGroup: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	ReqGetAllSubscriptionGroupConfig:    "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
	ReqGetTopicStatsInfo:                "GET_TOPIC_STATS_INFO",
	ReqGetConsumerConnectionList:        "GET_CONSUMER_CONNECTION_LIST",
	ReqGetProducerConnectionList:        "GET_PRODUCER_CONNECTION_LIST",
	ReqWipeWritePermOfBroker:            "WIPE_WRITE_PERM_OF_BROKER",
	ReqAddWritePermOfBroker:             "ADD_WRITE_PERM_OF_BROKER",
	ReqGetAllTopicListFromNameServer:    "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	ReqDeleteSubscriptionGroup:          "DELETE_SUBSCRIPTIONGROUP",
	ReqGetConsumeStats:                  "GET_CONSUME_STATS",
	ReqDeleteTopicInBroker:              "DELETE_TOPIC_IN_BROKER",
	ReqDeleteTopicInNamesrv:             "DELETE_TOPIC_IN_NAMESRV",
	ReqResetConsumerClientOffset:        "RESET_CONSUMER_CLIENT_OFFSET",
	ReqGetConsumerStatusFromClient:      "GET_CONSUMER_STATUS_FROM_CLIENT",
	ReqInvokeBrokerToResetOffset:        "INVOKE_BROKER_TO_RESET_OFFSET",
	ReqInvokeBrokerToGetConsumerStatus:  "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	ReqGetTopicsByCluster:               "GET_TOPICS_BY_CLUSTER",
	ReqQueryTopicConsumeByWho:           "QUERY_TOPIC_CONSUME_BY_WHO",
	ReqQueryConsumeTimeSpan:             "QUERY_CONSUME_TIME_SPAN",
	ReqViewBrokerStatsData:              "VIEW_BROKER_STATS_DATA",
	ReqGetBrokerConsumeStats:            "GET_BROKER_CONSUME_STATS",
	ReqGetConsumerRunningInfo:           "GET_CONSUMER_RUNNING_INFO",
	ReqConsumeMessageDirectly:           "CONSUME_MESSAGE_DIRECTLY",
	ReqSendMessageV2:                    "SEND_MESSAGE_V2",
	ReqSendBatchMessage:                 "SEND_BATCH_MESSAGE",
	ReqQueryConsumeQueue:                "QUERY_CONSUME_QUEUE",
	ReqRaftMembers:                      "RAFTMQ_RAFT_MEMBERS",
	ReqRaftAddVoter:                     "RAFTMQ_RAFT_ADD_VOTER",
	ReqRaftRemoveServer:                 "RAFTMQ_RAFT_REMOVE_SERVER",
	ReqRaftTransferLeadership:           "RAFTMQ_RAFT_TRANSFER_LEADERSHIP",
	ReqRaftSnapshot:                     "RAFTMQ_RAFT_SNAPSHOT",
	ReqACLSeed:                          "RAFTMQ_ACL_SEED",
	ReqPing:                             "RAFTMQ_PING",
	ReqQueryDataVersion:                 "QUERY_DATA_VERSION",
	ReqSendReplyMessage:                 "SEND_REPLY_MESSAGE",
	ReqSendReplyMessageV2:               "SEND_REPLY_MESSAGE_V2",
	ReqPushReplyMessageToClient:         "PUSH_REPLY_MESSAGE_TO_CLIENT",
}

var responseCodeNames = map[int16]string{
	ResSuccess:                        "SUCCESS",
	ResSystemError:                    "SYSTEM_ERROR",
	ResSystemBusy:                     "SYSTEM_BUSY",
	ResRequestCodeNotSupported:        "REQUEST_CODE_NOT_SUPPORTED",
	ResTransactionFailed:              "TRANSACTION_FAILED",
	ResFlushDiskTimeout:               "FLUSH_DISK_TIMEOUT",
	ResSlaveNotAvailable:              "SLAVE_NOT_AVAILABLE",
	ResFlushSlaveTimeout:              "FLUSH_SLAVE_TIMEOUT",
	ResMessageIllegal:                 "MESSAGE_ILLEGAL",
	ResServiceNotAvailable:            "SERVICE_NOT_AVAILABLE",
	ResVersionNotSupported:            "VERSION_NOT_SUPPORTED",
	ResNoPermission:                   "NO_PERMISSION",
	ResTopicNotExist:                  "TOPIC_NOT_EXIST",
	ResTopicExistAlready:              "TOPIC_EXIST_ALREADY",
	ResPullNotFound:                   "PULL_NOT_FOUND",
	ResPullRetryImmediately:           "PULL_RETRY_IMMEDIATELY",
	ResPullOffsetMoved:                "PULL_OFFSET_MOVED",
	ResQueryNotFound:                  "QUERY_NOT_FOUND",
	ResSubscriptionParseFailed:        "SUBSCRIPTION_PARSE_FAILED",
	ResSubscriptionNotExist:           "SUBSCRIPTION_NOT_EXIST",
	ResSubscriptionNotLatest:          "SUBSCRIPTION_NOT_LATEST",
	ResSubscriptionGroupNotExist:      "SUBSCRIPTION_GROUP_NOT_EXIST",
	ResFilterDataNotExist:             "FILTER_DATA_NOT_EXIST",
	ResFilterDataNotLatest:            "FILTER_DATA_NOT_LATEST",
	ResConsumerNotOnline:              "CONSUMER_NOT_ONLINE",
	ResConsumeMsgTimeout:              "CONSUME_MSG_TIMEOUT",
	ResNoMessage:                      "NO_MESSAGE",
	ResUpdateAndCreateACLConfigFailed: "UPDATE_AND_CREATE_ACL_CONFIG_FAILED",
	ResDeleteACLConfigFailed:          "DELETE_ACL_CONFIG_FAILED",
	ResUpdateGlobalWhiteAddrsFailed:   "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED",
}

// CodeName returns RocketMQ's name for a request code, or the number for a
// code this package does not know. Use ResponseCodeName for responses: the
// two code spaces overlap.
func CodeName(code int16) string {
	if n, ok := requestCodeNames[code]; ok {
		return n
	}
	return "REQUEST_" + strconv.Itoa(int(code))
}

// ResponseCodeName returns RocketMQ's name for a response code, or the
// number for a code this package does not know.
func ResponseCodeName(code int16) string {
	if n, ok := responseCodeNames[code]; ok {
		return n
	}
	return "RESPONSE_" + strconv.Itoa(int(code))
}
