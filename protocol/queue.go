package protocol

// Message queues and the orderly consumers' queue locks: LOCK_BATCH_MQ
// (41) and UNLOCK_BATCH_MQ (42) bodies, as RocketMQ's MessageQueue,
// LockBatchRequestBody, LockBatchResponseBody and UnlockBatchRequestBody.

// MessageQueue is one queue of a topic on one broker group, as RocketMQ's
// MessageQueue serialises it.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// LockBatchRequest is the LOCK_BATCH_MQ body; UNLOCK_BATCH_MQ's has the
// same fields.
type LockBatchRequest struct {
	ConsumerGroup string         `json:"consumerGroup"`
	ClientID      string         `json:"clientId"`
	MQSet         []MessageQueue `json:"mqSet"`
}

// LockBatchResponse is the LOCK_BATCH_MQ answer: the queues whose locks
// were granted or renewed.
type LockBatchResponse struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}
