package client

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// ExpressionType is the language of a MessageSelector's expression, as
// RocketMQ's ExpressionType.
type ExpressionType string

const (
	// ExprTag: "*" (or "") for every message, else tags separated by
	// "||". The broker filters by tag hash; the client drops the hash
	// collisions.
	ExprTag ExpressionType = protocol.ExprTag
	// ExprSQL92: an SQL92 condition on the message's properties (its
	// user properties, TAGS, KEYS...), evaluated by the broker alone.
	// The broker must run with the property filter on (the default).
	ExprSQL92 ExpressionType = protocol.ExprSQL92
)

// MessageSelector chooses a topic's messages a subscription receives: a
// tag expression or an SQL92 condition. The zero Type is ExprTag.
type MessageSelector struct {
	Type       ExpressionType
	Expression string
}

// Tag returns the selector of a tag expression: "*" or "" for every
// message, "A || B" for messages tagged A or B. Subscribe(topic, expr)
// is SubscribeSelector(topic, Tag(expr)).
func Tag(expr string) MessageSelector { return MessageSelector{Type: ExprTag, Expression: expr} }

// SQL92 returns the selector of an SQL92 condition over message
// properties, e.g. "a > 5 AND TAGS IN ('x', 'y')". The broker parses it:
// a condition it cannot parse is not refused by Subscribe or Start, but
// every pull of the subscription then fails with SUBSCRIPTION_PARSE_FAILED
// (code 23), which the consumer logs as an error, retrying each queue
// every 3 s.
func SQL92(expr string) MessageSelector { return MessageSelector{Type: ExprSQL92, Expression: expr} }

// String is the selector as "TYPE: expression".
func (s MessageSelector) String() string {
	typ := s.Type
	if typ == "" {
		typ = ExprTag
	}
	return string(typ) + ": " + s.Expression
}

// subscription is one topic's filter, as announced in heartbeats.
type subscription struct {
	topic   string
	expr    string
	typ     string   // protocol.ExprTag or protocol.ExprSQL92
	tags    []string // nil: all (and always for SQL92)
	version int64
	handler MessageHandler
}

// parseSubscription parses a tag expression (protocol.ParseTagExpression):
// "*" or "" for all, else tags separated by "||", trimmed, each once.
func parseSubscription(topic, expr string) (*subscription, error) {
	return parseSelector(topic, Tag(expr))
}

// parseSelector parses sel: a tag expression as parseSubscription, or a
// non-empty SQL92 condition, kept as it is for the broker to parse.
func parseSelector(topic string, sel MessageSelector) (*subscription, error) {
	if topic == "" {
		return nil, fmt.Errorf("%w: empty topic", ErrInvalidOption)
	}
	switch sel.Type {
	case "", ExprTag:
	case ExprSQL92:
		expr := strings.TrimSpace(sel.Expression)
		if expr == "" {
			return nil, fmt.Errorf("%w: empty SQL92 expression", ErrInvalidOption)
		}
		return &subscription{topic: topic, expr: expr, typ: protocol.ExprSQL92, version: time.Now().UnixMilli()}, nil
	default:
		return nil, fmt.Errorf("%w: unknown expression type %q", ErrInvalidOption, sel.Type)
	}
	tags, all, err := protocol.ParseTagExpression(sel.Expression)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	s := &subscription{topic: topic, expr: strings.TrimSpace(sel.Expression), typ: protocol.ExprTag, tags: tags,
		version: time.Now().UnixMilli()}
	if all {
		s.expr = protocol.SubAll
	}
	return s, nil
}

// matches reports whether a message's tags are wanted (the broker filters
// by tag hash only, so collisions are dropped here). An SQL92 selection
// is the broker's alone: everything it sends matches.
func (s *subscription) matches(m *message.MessageExt) bool {
	return s.tags == nil || slices.Contains(s.tags, m.Tags())
}

// data is the heartbeat form of the subscription: an SQL92 one has no
// tags or codes, as the official clients send it.
func (s *subscription) data() protocol.SubscriptionData {
	sd := protocol.SubscriptionData{Topic: s.topic, SubString: s.expr, TagsSet: []string{}, CodeSet: protocol.CodeSet{},
		SubVersion: s.version, ExpressionType: s.typ}
	for _, t := range s.tags {
		sd.TagsSet = append(sd.TagsSet, t)
		sd.CodeSet = append(sd.CodeSet, message.TagsHashCode(t))
	}
	return sd
}
