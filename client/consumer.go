package client

import (
	"context"
	"errors"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// MessageModel says how a consumer group shares a topic's messages.
type MessageModel int

const (
	// Clustering: the group's consumers split the queues; each message is
	// consumed by one of them; offsets live on the brokers.
	Clustering MessageModel = iota
	// Broadcasting: every consumer of the group gets every message;
	// offsets live in a local file.
	Broadcasting
)

// String returns RocketMQ's name of the model.
func (m MessageModel) String() string {
	if m == Broadcasting {
		return protocol.Broadcasting
	}
	return protocol.Clustering
}

// ConsumeFrom says where a group starts on a queue for which the broker has
// no committed offset. As in RocketMQ, it does not apply when the broker
// answers QUERY_CONSUMER_OFFSET with 0 because the queue still holds its
// first message: a new group then starts at the beginning.
type ConsumeFrom struct {
	where string
	at    time.Time
}

// ConsumeFromLast starts at the end of the queue (the default).
func ConsumeFromLast() ConsumeFrom { return ConsumeFrom{where: protocol.ConsumeFromLastOffset} }

// ConsumeFromFirst starts at the beginning of the queue.
func ConsumeFromFirst() ConsumeFrom { return ConsumeFrom{where: protocol.ConsumeFromFirstOffset} }

// ConsumeFromTimestamp starts at the first message stored at or after t.
func ConsumeFromTimestamp(t time.Time) ConsumeFrom {
	return ConsumeFrom{where: protocol.ConsumeFromTimestamp, at: t}
}

// String returns RocketMQ's name of the starting point.
func (f ConsumeFrom) String() string {
	if f.where == "" {
		return ConsumeFromLast().where
	}
	return f.where
}

// ConsumeResult is what a push consumer's handler says about a batch.
type ConsumeResult int

const (
	// ConsumeSuccess acknowledges the batch.
	ConsumeSuccess ConsumeResult = iota
	// ConsumeRetryLater asks for the batch again later: in clustering it
	// is sent back to the broker (%RETRY%group, delay level 3 +
	// reconsumeTimes) or, if that fails, kept and consumed again locally.
	// In broadcasting it is dropped, as in RocketMQ.
	ConsumeRetryLater
)

// MessageHandler consumes a batch (WithConsumeBatchSize, default 1) of one
// queue. It runs on the consumer's worker pool and must be safe for
// concurrent use. A panic counts as ConsumeRetryLater.
type MessageHandler func(ctx context.Context, msgs []*message.MessageExt) ConsumeResult

// Consumer errors.
var (
	// ErrNoSubscription: Start was called with nothing to consume.
	ErrNoSubscription = errors.New("client: no subscription")
	// ErrQueueNotAssigned: the queue is not consumed by this consumer.
	ErrQueueNotAssigned = errors.New("client: queue not assigned")
	// ErrStarted: the call must come before Start.
	ErrStarted = errors.New("client: already started")
)
