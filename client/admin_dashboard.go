package client

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// QueueBounds is the stored range of one queue.
type QueueBounds struct {
	Queue MessageQueue
	// Min is the queue's first stored offset (GET_MIN_OFFSET).
	Min int64
	// Max is the next offset to store (GET_MAX_OFFSET); Max-Min messages
	// are stored.
	Max int64
}

// TopicQueueBounds returns the min and max offset of every read queue of
// topic, sorted by broker group and queue id.
func (a *Admin) TopicQueueBounds(ctx context.Context, topic string) ([]QueueBounds, error) {
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	route := newRoute(topic, *rd, 0)
	var out []QueueBounds
	for _, q := range route.ReadQueues {
		bd, _ := route.Broker(q.BrokerName)
		b := QueueBounds{Queue: q}
		if b.Min, err = a.queueOffset(ctx, bd, remoting.ReqGetMinOffset, q); err != nil {
			return out, err
		}
		if b.Max, err = a.queueOffset(ctx, bd, remoting.ReqGetMaxOffset, q); err != nil {
			return out, err
		}
		out = append(out, b)
	}
	return out, nil
}

// queueOffset asks q's group for one of its offsets (GET_MIN_OFFSET,
// GET_MAX_OFFSET).
func (a *Admin) queueOffset(ctx context.Context, bd protocol.BrokerData, code int16, q MessageQueue) (int64, error) {
	resp, _, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
		return remoting.NewRequest(code, queueExt(q), nil)
	})
	if err != nil {
		return 0, err
	}
	return extOffset(resp)
}

// ConsumerGroups returns, sorted, the consumer groups some broker group
// knows: those with a subscription group config
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG) and those with a committed offset
// (GET_ALL_CONSUMER_OFFSET). A broker group that cannot be reached fails
// the call.
func (a *Admin) ConsumerGroups(ctx context.Context) ([]string, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, bd := range groups(ci, "", "") {
		var sg protocol.SubscriptionGroupWrapper
		if err := a.groupJSON(ctx, bd, remoting.ReqGetAllSubscriptionGroupConfig, &sg); err != nil {
			return nil, err
		}
		for name := range sg.SubscriptionGroupTable {
			seen[name] = true
		}
		var ow protocol.ConsumerOffsetWrapper
		if err := a.groupJSON(ctx, bd, remoting.ReqGetAllConsumerOffset, &ow); err != nil {
			return nil, err
		}
		for key := range ow.OffsetTable {
			if _, group, ok := strings.Cut(key, "@"); ok {
				seen[group] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// groupJSON sends a body-less request to bd (leader first) and decodes its
// JSON answer into v.
func (a *Admin) groupJSON(ctx context.Context, bd protocol.BrokerData, code int16, v any) error {
	var req *remoting.Command
	resp, addr, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
		req = remoting.NewRequest(code, nil, nil)
		return req
	})
	if err != nil {
		return err
	}
	return decodeJSON(addr, req, resp, v)
}
