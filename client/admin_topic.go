package client

import (
	"cmp"
	"context"
	"fmt"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// TopicQueueStats is one queue of a topic's GET_TOPIC_STATS_INFO answer
// (mqadmin topicStatus).
type TopicQueueStats struct {
	Queue MessageQueue
	// MinOffset is the queue's first stored offset.
	MinOffset int64
	// MaxOffset is the next offset to store: MaxOffset-MinOffset messages
	// are stored.
	MaxOffset int64
	// LastUpdateTimestamp is the store time (Unix ms) of the queue's last
	// message, 0 if it has none.
	LastUpdateTimestamp int64
}

// TopicStats asks every broker group of topic's route for its
// GET_TOPIC_STATS_INFO table and returns every write queue's min and max
// offset and last store time, sorted by broker group and queue id. A group
// that cannot answer fails the call (the *Error names its address and
// code).
func (a *Admin) TopicStats(ctx context.Context, topic string) ([]TopicQueueStats, error) {
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := []TopicQueueStats{}
	for _, bd := range sortedBrokers(rd) {
		resp, addr, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
			return remoting.NewRequest(remoting.ReqGetTopicStatsInfo, map[string]string{"topic": topic}, nil)
		})
		if err != nil {
			return out, err
		}
		var st protocol.TopicStatsTable
		if err := protocol.UnmarshalFastJSON(resp.Body, &st); err != nil {
			return out, fmt.Errorf("client: GET_TOPIC_STATS_INFO answer of %s (%s): %w", bd.BrokerName, addr, err)
		}
		for _, q := range protocol.SortedQueues(st.OffsetTable) {
			o := st.OffsetTable[q]
			out = append(out, TopicQueueStats{Queue: MessageQueue{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID}, MinOffset: o.MinOffset, MaxOffset: o.MaxOffset,
				LastUpdateTimestamp: o.LastUpdateTimestamp})
		}
	}
	return out, nil
}

// ValidTopicPerm reports whether perm is one SetTopicPerm accepts: 2
// (write only), 4 (read only) or 6 (read and write), as mqadmin
// updateTopicPerm.
func ValidTopicPerm(perm int) bool {
	return perm == protocol.PermWrite || perm == protocol.PermRead || perm == protocol.PermReadWrite
}

// SetTopicPerm sets topic's permission to perm (ValidTopicPerm: 2 write,
// 4 read, 6 both) on every broker group of its route, keeping each
// group's queue counts, order flag, filter type and system flag as
// GET_ALL_TOPIC_CONFIG reports them (mqadmin updateTopicPerm). It returns
// the groups changed; a group that fails stops the call and the groups
// before it keep the new permission.
func (a *Admin) SetTopicPerm(ctx context.Context, topic string, perm int) ([]Placement, error) {
	if !ValidTopicPerm(perm) {
		return nil, fmt.Errorf("%w: perm %d (want 2 write, 4 read or 6 read and write)", ErrInvalidOption, perm)
	}
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []Placement
	for _, bd := range sortedBrokers(rd) {
		tc, err := a.topicConfig(ctx, bd, topic)
		if err != nil {
			return out, err
		}
		ext := protocol.CreateTopicHeader{Topic: topic, DefaultTopic: protocol.DefaultTopic, ReadQueueNums: tc.ReadQueueNums,
			WriteQueueNums: tc.WriteQueueNums, Perm: int32(perm), TopicFilterType: cmp.Or(tc.TopicFilterType, protocol.FilterSingleTag),
			TopicSysFlag: tc.TopicSysFlag, Order: tc.Order}.Ext()
		addr, err := a.callGroup(ctx, bd, func() *remoting.Command {
			return remoting.NewRequest(remoting.ReqUpdateAndCreateTopic, ext, nil)
		})
		if err != nil {
			return out, err
		}
		out = append(out, Placement{BrokerName: bd.BrokerName, Addr: addr})
	}
	return out, nil
}

// topicConfig reads topic's config from bd's GET_ALL_TOPIC_CONFIG.
func (a *Admin) topicConfig(ctx context.Context, bd protocol.BrokerData, topic string) (protocol.TopicConfig, error) {
	var w protocol.TopicConfigWrapper
	if err := a.groupJSON(ctx, bd, remoting.ReqGetAllTopicConfig, &w); err != nil {
		return protocol.TopicConfig{}, err
	}
	tc, ok := w.TopicConfigTable[topic]
	if !ok {
		return tc, fmt.Errorf("%w: %s has no topic %s (its route is stale)", ErrNoRoute, bd.BrokerName, topic)
	}
	return tc, nil
}
