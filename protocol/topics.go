package protocol

import (
	"fmt"
	"strings"
)

// System topics, prefixes and name limits, as RocketMQ's TopicValidator
// and MixAll.
const (
	// DefaultTopic is the topic producers name for auto-creation.
	DefaultTopic = "TBW102"
	// RetryPrefix starts a consumer group's retry topic.
	RetryPrefix = "%RETRY%"
	// DLQPrefix starts a consumer group's dead-letter topic.
	DLQPrefix = "%DLQ%"
	// ScheduleTopic holds messages waiting for their delay level.
	ScheduleTopic = "SCHEDULE_TOPIC_XXXX"
	// TimerTopic holds timer messages (RocketMQ 5's name).
	TimerTopic = "rmq_sys_wheel_timer"
	// TransHalfTopic holds transaction half messages.
	TransHalfTopic = "RMQ_SYS_TRANS_HALF_TOPIC"
	// TransOpHalfTopic holds the op records of decided half messages.
	TransOpHalfTopic = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// TransCheckMaxTimeTopic holds half messages checked back too often.
	TransCheckMaxTimeTopic = "TRANS_CHECK_MAX_TIME_TOPIC"
	// TraceTopic is the default message-trace topic.
	TraceTopic = "RMQ_SYS_TRACE_TOPIC"
	// ReplyTopicSuffix names a cluster's request-reply topic
	// (<cluster>_REPLY_TOPIC).
	ReplyTopicSuffix = "_REPLY_TOPIC"

	// MaxTopicLength bounds a topic name (TopicValidator.TOPIC_MAX_LENGTH).
	MaxTopicLength = 127
	// MaxGroupLength bounds a group name (Validators.CHARACTER_MAX_LENGTH).
	MaxGroupLength = 255
	// MaxQueueNums bounds a topic's read or write queue count here.
	MaxQueueNums = 1024
)

// notAllowedSend is RocketMQ's TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET.
var notAllowedSend = map[string]bool{
	ScheduleTopic: true, TimerTopic: true, TransHalfTopic: true, TransOpHalfTopic: true,
	TransCheckMaxTimeTopic: true, "RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC": true,
}

// SendForbidden reports whether clients may not send to topic (the store's
// own system topics).
func SendForbidden(topic string) bool { return notAllowedSend[topic] }

// RetryTopic is the retry topic of a consumer group.
func RetryTopic(group string) string { return RetryPrefix + group }

// DLQTopic is the dead-letter topic of a consumer group.
func DLQTopic(group string) string { return DLQPrefix + group }

// RetryGroup returns the group of a retry topic, ok false when topic is
// not one.
func RetryGroup(topic string) (string, bool) {
	g, ok := strings.CutPrefix(topic, RetryPrefix)
	return g, ok && g != ""
}

// IsRetryTopic reports whether topic is a %RETRY% topic.
func IsRetryTopic(topic string) bool { return strings.HasPrefix(topic, RetryPrefix) }

// IsDLQTopic reports whether topic is a %DLQ% topic.
func IsDLQTopic(topic string) bool { return strings.HasPrefix(topic, DLQPrefix) }

// IsSystemTopic reports whether topic is one the broker keeps for itself
// or for consumer groups: TBW102, the store's system topics, and %RETRY%
// and %DLQ% topics. Admin listings hide them.
func IsSystemTopic(topic string) bool {
	return topic == DefaultTopic || topic == TraceTopic || notAllowedSend[topic] || IsRetryTopic(topic) || IsDLQTopic(topic)
}

// topicCharset is what a topic or group name may hold besides letters and
// digits.
const topicCharset = "%|_-"

func validName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(topicCharset, c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// ValidateTopic checks a topic name as RocketMQ's TopicValidator does; the
// error is worded as its remark.
func ValidateTopic(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the specified topic is blank")
	case len(name) > MaxTopicLength:
		return fmt.Errorf("the specified topic is longer than topic max length %d", MaxTopicLength)
	case !validName(name):
		return fmt.Errorf("the specified topic[%s] contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", name)
	}
	return nil
}

// ValidateGroup checks a producer or consumer group name as RocketMQ's
// Validators.checkGroup does.
func ValidateGroup(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the specified group is blank")
	case len(name) > MaxGroupLength:
		return fmt.Errorf("the specified group is longer than group max length %d", MaxGroupLength)
	case !validName(name):
		return fmt.Errorf("the specified group[%s] contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", name)
	}
	return nil
}
