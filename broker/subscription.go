package broker

import (
	"fmt"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/store"
)

// subscription is a parsed subscription: which tag hashes a consumer of a
// topic wants. It is the store.Filter of the consumer's pulls.
type subscription struct {
	Topic          string
	SubString      string
	ExpressionType string
	SubVersion     int64
	ClassFilter    bool
	all            bool
	tags           []string
	codes          map[int64]bool
}

var _ store.Filter = (*subscription)(nil)

// subscriptionOf turns heartbeat subscription data into a filter. The tag
// hashes are taken from the codeSet when it has them, and computed from
// the expression otherwise.
func subscriptionOf(sd protocol.SubscriptionData) *subscription {
	s, err := parseSubscription(sd.Topic, sd.SubString, sd.ExpressionType)
	if err != nil {
		// Not a TAG expression (SQL92): the broker cannot filter it;
		// deliver everything and let the client filter.
		s = &subscription{Topic: sd.Topic, SubString: sd.SubString, ExpressionType: sd.ExpressionType, all: true}
	}
	s.SubVersion, s.ClassFilter = sd.SubVersion, sd.ClassFilterMode
	if !s.all && len(sd.CodeSet) > 0 {
		codes := make(map[int64]bool, len(sd.CodeSet))
		for _, c := range sd.CodeSet {
			codes[c] = true
		}
		s.codes = codes
	}
	return s
}

// parseSubscription parses a TAG expression ("*", "", or "A || B"), as
// RocketMQ's FilterAPI.buildSubscriptionData. Other expression types are
// refused: this broker filters by tag only.
func parseSubscription(topic, expr, exprType string) (*subscription, error) {
	if exprType == "" {
		exprType = protocol.ExprTag
	}
	s := &subscription{Topic: topic, SubString: expr, ExpressionType: exprType}
	if exprType != protocol.ExprTag {
		return nil, fmt.Errorf("the broker does not support consumer to filter message by %s", exprType)
	}
	tags, all, err := protocol.ParseTagExpression(expr)
	if err != nil {
		return nil, err
	}
	if all {
		s.SubString, s.all = protocol.SubAll, true
		return s, nil
	}
	s.tags, s.codes = tags, make(map[int64]bool, len(tags))
	for _, tag := range tags {
		s.codes[message.TagsHashCode(tag)] = true
	}
	return s, nil
}

// MatchesAll implements store.Filter.
func (s *subscription) MatchesAll() bool { return s == nil || s.all || s.ClassFilter }

// Matches implements store.Filter: whether a consumequeue entry's tag
// hash passes (RocketMQ's ExpressionMessageFilter.isMatchedByConsumeQueue).
func (s *subscription) Matches(tagsCode int64) bool {
	if s.MatchesAll() {
		return true
	}
	return s.codes[tagsCode]
}
