package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// QueueProgress is a consumer group's position in one queue.
type QueueProgress struct {
	Queue MessageQueue
	// BrokerOffset is the queue's max offset (the next offset to store).
	BrokerOffset int64
	// ConsumerOffset is the group's committed offset (the next offset to
	// consume); -1 when the group has none for the queue.
	ConsumerOffset int64
	// Lag is BrokerOffset - ConsumerOffset (BrokerOffset without a
	// committed offset).
	Lag int64
}

// ConsumerGroupProgress reports, per read queue of each topic, the broker's
// max offset, the group's committed offset and the lag. Without topics it
// covers every topic the name server lists except system topics (but with
// the group's %RETRY% topic), and keeps the queues for which the broker
// reports an offset — note that, as RocketMQ, a broker reports 0 for a
// queue the group never consumed while the queue's first message is
// still stored.
func (a *Admin) ConsumerGroupProgress(ctx context.Context, group string, topics ...string) ([]QueueProgress, error) {
	explicit := len(topics) > 0
	if !explicit {
		all, err := a.ListTopics(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range all {
			if !isSystemTopic(t) || t == protocol.RetryTopic(group) {
				topics = append(topics, t)
			}
		}
	}
	var out []QueueProgress
	for _, topic := range slices.Sorted(slices.Values(topics)) {
		rd, err := a.Route(ctx, topic)
		if errors.Is(err, ErrNoRoute) && !explicit {
			continue
		}
		if err != nil {
			return out, err
		}
		for _, q := range newRoute(topic, *rd, 0).ReadQueues {
			p, err := a.queueProgress(ctx, rd, group, q)
			if err != nil {
				return out, err
			}
			if explicit || p.ConsumerOffset >= 0 {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// Topics RocketMQ keeps for itself that protocol does not name: admin
// listings hide them too, as does every topic with a system prefix.
const (
	offsetMovedEventTopic = "OFFSET_MOVED_EVENT"
	selfTestTopic         = "SELF_TEST_TOPIC"
	benchmarkTopic        = "BenchmarkTest"
	sysTopicPrefix        = "RMQ_SYS_"
	sysTopicPrefixLower   = "rmq_sys_"
)

// isSystemTopic reports the topics RocketMQ keeps for itself. It hides
// more than protocol.IsSystemTopic (every RMQ_SYS_ and rmq_sys_ topic,
// the three above) and not TRANS_CHECK_MAX_TIME_TOPIC.
func isSystemTopic(t string) bool {
	return t == protocol.DefaultTopic || t == protocol.ScheduleTopic || t == offsetMovedEventTopic ||
		t == selfTestTopic || t == benchmarkTopic || t == protocol.TraceTopic ||
		strings.HasPrefix(t, sysTopicPrefix) || strings.HasPrefix(t, sysTopicPrefixLower) ||
		protocol.IsRetryTopic(t) || protocol.IsDLQTopic(t)
}

func queueExt(q MessageQueue) map[string]string {
	return protocol.QueueHeader{Topic: q.Topic, QueueID: q.QueueID}.Ext()
}

// offsetHeader names group's offset in q (QUERY_CONSUMER_OFFSET).
func offsetHeader(group string, q MessageQueue) protocol.ConsumerOffsetHeader {
	return protocol.ConsumerOffsetHeader{ConsumerGroup: group, Topic: q.Topic, QueueID: q.QueueID}
}

func (a *Admin) queueProgress(ctx context.Context, rd *protocol.TopicRouteData, group string, q MessageQueue) (QueueProgress, error) {
	bd, _ := (&Route{Data: *rd}).Broker(q.BrokerName)
	p := QueueProgress{Queue: q, ConsumerOffset: -1}
	resp, _, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
		return remoting.NewRequest(remoting.ReqGetMaxOffset, queueExt(q), nil)
	})
	if err != nil {
		return p, err
	}
	if p.BrokerOffset, err = extOffset(resp); err != nil {
		return p, err
	}
	resp, _, err = a.callGroupResp(ctx, bd, func() *remoting.Command {
		return remoting.NewRequest(remoting.ReqQueryConsumerOffset, offsetHeader(group, q).Ext(false), nil)
	})
	var e *Error
	switch {
	case errors.As(err, &e) && e.Code == remoting.ResQueryNotFound:
		p.Lag = p.BrokerOffset
		return p, nil
	case err != nil:
		return p, err
	}
	if p.ConsumerOffset, err = extOffset(resp); err != nil {
		return p, err
	}
	p.Lag = max(0, p.BrokerOffset-p.ConsumerOffset)
	return p, nil
}

func extOffset(resp *remoting.Command) (int64, error) {
	v := resp.ExtFields["offset"]
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("client: answer offset %q: %w", v, err)
	}
	return n, nil
}

// ResetOffsetByTimestamp sets the group's committed offset of every read
// queue of topic to the first message stored at or after ts (the queue's
// max offset if none), and returns the new offsets. Consumers of the group
// that are running keep their in-memory offsets and commit them again:
// stop them first, or use ResetOffset, which resets through the broker so
// running consumers follow.
func (a *Admin) ResetOffsetByTimestamp(ctx context.Context, group, topic string, ts time.Time) (map[MessageQueue]int64, error) {
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	route := newRoute(topic, *rd, 0)
	out := map[MessageQueue]int64{}
	for _, q := range route.ReadQueues {
		bd, _ := route.Broker(q.BrokerName)
		off, err := a.searchOffset(ctx, bd, q, ts)
		if err != nil {
			return out, err
		}
		if err := a.commitOffset(ctx, bd, group, q, off); err != nil {
			return out, err
		}
		out[q] = off
	}
	return out, nil
}

// commitOffset sends UPDATE_CONSUMER_OFFSET to the group's leader.
func (a *Admin) commitOffset(ctx context.Context, bd protocol.BrokerData, group string, q MessageQueue, off int64) error {
	leader := bd.BrokerAddrs[0]
	if leader == "" {
		return fmt.Errorf("%w: %s has no leader", ErrBrokerNotFound, bd.BrokerName)
	}
	h := offsetHeader(group, q)
	h.CommitOffset = off
	ext := h.Ext(true)
	_, err := a.c.call(ctx, leader, remoting.NewRequest(remoting.ReqUpdateConsumerOffset, ext, nil))
	return err
}

// UpdateConsumerOffset sets the group's committed offset of one queue.
func (a *Admin) UpdateConsumerOffset(ctx context.Context, group string, q MessageQueue, offset int64) error {
	rd, err := a.Route(ctx, q.Topic)
	if err != nil {
		return err
	}
	bd, ok := (&Route{Data: *rd}).Broker(q.BrokerName)
	if !ok {
		return fmt.Errorf("%w: %s in the route of %s", ErrBrokerNotFound, q.BrokerName, q.Topic)
	}
	return a.commitOffset(ctx, bd, group, q, offset)
}
