package broker

// Topics: the replicated topic table and its system topics. Topic names
// follow RocketMQ's rules (protocol.ValidateTopic); TBW102 is the default
// topic producers send through for auto-creation, %RETRY%<group> and
// %DLQ%<group> are created on demand.

import (
	"context"
	"fmt"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

const (
	retryQueueNums = 1
	dlqQueueNums   = 1
	// defaultTopicQueueNums is the queue count TBW102 advertises
	// (RocketMQ's BrokerConfig.defaultTopicQueueNums).
	defaultTopicQueueNums = 8
)

// topicTable reads the applied topics and creates topics through the
// group.
type topicTable struct {
	meta *meta.State
	rep  *replica
}

// topic returns a topic's applied configuration on this node.
func (t *topicTable) topic(name string) (meta.TopicConfig, bool) { return t.meta.Topic(name) }

// ensure makes sure tc.Name exists, creating it through the group if
// not: proposed here on the leader, or sent to the leader as
// UPDATE_AND_CREATE_TOPIC from a follower. It returns the topic as applied.
func (t *topicTable) ensure(ctx context.Context, tc meta.TopicConfig) (meta.TopicConfig, error) {
	if cur, ok := t.topic(tc.Name); ok {
		return cur, nil
	}
	if err := t.put(ctx, tc); err != nil {
		return meta.TopicConfig{}, err
	}
	if cur, ok := t.topic(tc.Name); ok {
		return cur, nil
	}
	// Created through the leader; this follower has not applied it yet.
	return tc, nil
}

// put creates or updates a topic through the group.
func (t *topicTable) put(ctx context.Context, tc meta.TopicConfig) error {
	if t.rep.isLeader() {
		_, err := t.rep.propose(ctx, &meta.PutTopicCommand{Topic: tc})
		return err
	}
	req := remoting.NewRequest(remoting.ReqUpdateAndCreateTopic, createTopicHeader(tc).Ext(), nil)
	resp := t.rep.forward(ctx, req)
	if resp.Code != remoting.ResSuccess {
		return fmt.Errorf("broker: create topic %s via leader: code %d: %s", tc.Name, resp.Code, resp.Remark)
	}
	return nil
}

// createTopicHeader is the UPDATE_AND_CREATE_TOPIC header of tc.
func createTopicHeader(tc meta.TopicConfig) protocol.CreateTopicHeader {
	return protocol.CreateTopicHeader{
		Topic: tc.Name, DefaultTopic: protocol.DefaultTopic, ReadQueueNums: tc.ReadQueueNums,
		WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm, TopicFilterType: filterTypeName(tc.FilterType),
		TopicSysFlag: tc.TopicSysFlag, Order: tc.Order,
	}
}

// filterTypeName is RocketMQ's TopicFilterType name of a stored filter
// type.
func filterTypeName(f uint8) string {
	if f == 1 {
		return protocol.FilterMultiTag
	}
	return protocol.FilterSingleTag
}

// retryTopicConfig is the %RETRY% topic of a group.
func retryTopicConfig(group string) meta.TopicConfig {
	return meta.TopicConfig{Name: protocol.RetryTopic(group), ReadQueueNums: retryQueueNums, WriteQueueNums: retryQueueNums, Perm: protocol.PermReadWrite}
}

// dlqTopicConfig is the %DLQ% topic of a group: write only, so normal
// subscriptions cannot read it (an operator grants read to drain it).
func dlqTopicConfig(group string) meta.TopicConfig {
	return meta.TopicConfig{Name: protocol.DLQTopic(group), ReadQueueNums: dlqQueueNums, WriteQueueNums: dlqQueueNums, Perm: protocol.PermWrite}
}

// defaultTopicConfig is TBW102 as RocketMQ creates it when auto-creation is
// on: readable, writable and inheritable, 8 queues.
func defaultTopicConfig() meta.TopicConfig {
	return meta.TopicConfig{
		Name: protocol.DefaultTopic, ReadQueueNums: defaultTopicQueueNums, WriteQueueNums: defaultTopicQueueNums,
		Perm: protocol.PermAll,
	}
}
