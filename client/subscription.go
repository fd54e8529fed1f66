package client

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// subscription is one topic's filter, as announced in heartbeats.
type subscription struct {
	topic   string
	expr    string
	tags    []string // nil: all
	version int64
	handler MessageHandler
}

// parseSubscription parses a tag expression (protocol.ParseTagExpression):
// "*" or "" for all, else tags separated by "||", trimmed, each once.
func parseSubscription(topic, expr string) (*subscription, error) {
	if topic == "" {
		return nil, fmt.Errorf("%w: empty topic", ErrInvalidOption)
	}
	tags, all, err := protocol.ParseTagExpression(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	s := &subscription{topic: topic, expr: strings.TrimSpace(expr), tags: tags, version: time.Now().UnixMilli()}
	if all {
		s.expr = protocol.SubAll
	}
	return s, nil
}

// matches reports whether a message's tags are wanted (the broker filters
// by tag hash only, so collisions are dropped here).
func (s *subscription) matches(m *message.MessageExt) bool {
	return s.tags == nil || slices.Contains(s.tags, m.Tags())
}

// data is the heartbeat form of the subscription.
func (s *subscription) data() protocol.SubscriptionData {
	sd := protocol.SubscriptionData{Topic: s.topic, SubString: s.expr, TagsSet: []string{}, CodeSet: protocol.CodeSet{},
		SubVersion: s.version, ExpressionType: protocol.ExprTag}
	for _, t := range s.tags {
		sd.TagsSet = append(sd.TagsSet, t)
		sd.CodeSet = append(sd.CodeSet, message.TagsHashCode(t))
	}
	return sd
}
