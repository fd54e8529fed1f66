package broker

// Topics: the replicated topic table and its system topics. Topic names
// follow RocketMQ's rules (charset [%|a-zA-Z0-9_-], at most 127 bytes);
// TBW102 is the default topic producers send through for auto-creation,
// %RETRY%<group> and %DLQ%<group> are created on demand.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/remoting"
)

// System topic names and limits, as RocketMQ.
const (
	DefaultTopic     = "TBW102"
	RetryPrefix      = "%RETRY%"
	DLQPrefix        = "%DLQ%"
	ScheduleTopic    = "SCHEDULE_TOPIC_XXXX"
	MaxTopicLength   = 127
	PermRead         = 4
	PermWrite        = 2
	PermInherit      = 1
	defaultPermRW    = PermRead | PermWrite
	retryQueueNums   = 1
	maxTopicQueues   = 1024
	topicNameCharset = "%|_-"
)

// ValidateTopic checks a topic name as RocketMQ's TopicValidator does.
func ValidateTopic(name string) error {
	if name == "" {
		return fmt.Errorf("the specified topic is blank")
	}
	if len(name) > MaxTopicLength {
		return fmt.Errorf("the specified topic is longer than topic max length %d", MaxTopicLength)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(topicNameCharset, r)
		if !ok {
			return fmt.Errorf("the specified topic[%s] contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", name)
		}
	}
	return nil
}

// RetryTopic is the retry topic of a consumer group.
func RetryTopic(group string) string { return RetryPrefix + group }

// DLQTopic is the dead-letter topic of a consumer group.
func DLQTopic(group string) string { return DLQPrefix + group }

// topic returns a topic's applied configuration on this node.
func (b *Broker) topic(name string) (dledger.TopicConfig, bool) {
	return b.node.Metadata().Topic(name)
}

// ensureTopic makes sure tc.Name exists, creating it through the group if
// not: proposed here on the leader, or sent to the leader as
// UPDATE_AND_CREATE_TOPIC from a follower. It returns the topic as applied.
func (b *Broker) ensureTopic(ctx context.Context, tc dledger.TopicConfig) (dledger.TopicConfig, error) {
	if t, ok := b.topic(tc.Name); ok {
		return t, nil
	}
	if err := b.putTopic(ctx, tc); err != nil {
		return dledger.TopicConfig{}, err
	}
	if t, ok := b.topic(tc.Name); ok {
		return t, nil
	}
	// Created through the leader; this follower has not applied it yet.
	return tc, nil
}

// putTopic creates or updates a topic through the group.
func (b *Broker) putTopic(ctx context.Context, tc dledger.TopicConfig) error {
	if b.node.IsLeader() {
		_, err := b.propose(ctx, &dledger.PutTopicCommand{Topic: tc})
		return err
	}
	req := remoting.NewRequest(remoting.ReqUpdateAndCreateTopic, topicExt(tc), nil)
	resp := b.forward(ctx, req)
	if resp.Code != remoting.ResSuccess {
		return fmt.Errorf("broker: create topic %s via leader: code %d: %s", tc.Name, resp.Code, resp.Remark)
	}
	return nil
}

// topicExt is the UPDATE_AND_CREATE_TOPIC header of tc, as RocketMQ's
// CreateTopicRequestHeader.
func topicExt(tc dledger.TopicConfig) map[string]string {
	filter := "SINGLE_TAG"
	if tc.FilterType == 1 {
		filter = "MULTI_TAG"
	}
	return map[string]string{
		"topic":           tc.Name,
		"defaultTopic":    DefaultTopic,
		"readQueueNums":   strconv.Itoa(int(tc.ReadQueueNums)),
		"writeQueueNums":  strconv.Itoa(int(tc.WriteQueueNums)),
		"perm":            strconv.Itoa(int(tc.Perm)),
		"topicFilterType": filter,
		"topicSysFlag":    strconv.Itoa(int(tc.TopicSysFlag)),
		"order":           strconv.FormatBool(tc.Order),
	}
}

// retryTopicConfig is the %RETRY% topic of a group.
func retryTopicConfig(group string) dledger.TopicConfig {
	return dledger.TopicConfig{Name: RetryTopic(group), ReadQueueNums: retryQueueNums, WriteQueueNums: retryQueueNums, Perm: defaultPermRW}
}
