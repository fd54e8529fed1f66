package broker

import (
	"fmt"

	"github.com/raftmq/raftmq/broker/filter"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/store"
)

// subscription is a parsed subscription: which messages a consumer of a
// topic wants. A TAG expression is decided on the consumequeue's tag
// hashes; an SQL92 expression on each message's properties (the store
// reads them). It is the store.Filter of the consumer's pulls.
type subscription struct {
	Topic          string
	SubString      string
	ExpressionType string
	SubVersion     int64
	ClassFilter    bool
	all            bool
	tags           []string
	codes          map[int64]bool
	sql            *filter.Expression
	// invalid is why a heartbeat's subscription did not parse: pulls
	// that rely on it are refused with it.
	invalid error
	// wire is the heartbeat's data, which the admin answers show.
	wire protocol.SubscriptionData
}

var (
	_ store.Filter         = (*subscription)(nil)
	_ store.PropertyFilter = (*sqlSubscription)(nil)
)

// subscriptions parses subscription expressions: tags always, SQL92 when
// the broker's property filter is on (Config.EnablePropertyFilter).
type subscriptions struct {
	propertyFilter bool
}

// fromHeartbeat turns heartbeat subscription data into a filter. The tag
// hashes are taken from the codeSet when it has them, and computed from
// the expression otherwise. One that does not parse is kept with its
// error, which the group's pulls then get.
func (p subscriptions) fromHeartbeat(sd protocol.SubscriptionData) *subscription {
	s, err := p.parse(sd.Topic, sd.SubString, sd.ExpressionType)
	if err != nil {
		s = &subscription{Topic: sd.Topic, SubString: sd.SubString, ExpressionType: sd.ExpressionType, invalid: err}
	}
	s.SubVersion, s.ClassFilter, s.wire = sd.SubVersion, sd.ClassFilterMode, sd
	if s.sql == nil && !s.all && s.invalid == nil && len(sd.CodeSet) > 0 {
		codes := make(map[int64]bool, len(sd.CodeSet))
		for _, c := range sd.CodeSet {
			codes[c] = true
		}
		s.codes = codes
	}
	return s
}

// parse parses an expression of exprType: TAG ("*", "", or "A || B", as
// RocketMQ's FilterAPI.buildSubscriptionData) or SQL92.
func (p subscriptions) parse(topic, expr, exprType string) (*subscription, error) {
	if exprType == "" {
		exprType = protocol.ExprTag
	}
	s := &subscription{Topic: topic, SubString: expr, ExpressionType: exprType}
	switch exprType {
	case protocol.ExprTag:
	case protocol.ExprSQL92:
		if !p.propertyFilter {
			return nil, errPropertyFilterOff
		}
		sql, err := filter.Compile(expr)
		if err != nil {
			return nil, err
		}
		s.sql = sql
		if tags, ok := sql.RequiredValues(message.PropertyTags); ok {
			// The expression pins TAGS: the consumequeue's tag hashes
			// skip most other messages before they are read.
			s.codes = make(map[int64]bool, len(tags))
			for _, tag := range tags {
				s.codes[message.TagsHashCode(tag)] = true
			}
		}
		return s, nil
	default:
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

// errPropertyFilterOff is RocketMQ's answer to an SQL92 subscription on a
// broker with enablePropertyFilter false.
var errPropertyFilterOff = fmt.Errorf("the broker does not support consumer to filter message by %s (enablePropertyFilter is false)", protocol.ExprSQL92)

// filter returns the store.Filter of s: s itself, or its SQL92 form.
func (s *subscription) filter() store.Filter {
	if s == nil {
		return nil
	}
	if s.sql != nil {
		return (*sqlSubscription)(s)
	}
	return s
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

// sqlSubscription is an SQL92 subscription as a store.PropertyFilter: the
// consumequeue cannot decide it, so the properties of every message that
// passes the tag hashes are read. An expression that pins TAGS (TAGS =
// 'a' or TAGS IN (...), ANDed with the rest) has those tags' hashes as
// codes; any other passes every entry.
type sqlSubscription subscription

// MatchesAll implements store.Filter.
func (s *sqlSubscription) MatchesAll() bool { return false }

// Matches implements store.Filter: a message whose tag hash is not one of
// the pinned tags' cannot match (a hash collision is decided on the
// properties).
func (s *sqlSubscription) Matches(tagsCode int64) bool { return s.codes == nil || s.codes[tagsCode] }

// MatchesProperties implements store.PropertyFilter.
func (s *sqlSubscription) MatchesProperties(props message.EncodedProperties) bool {
	return s.sql.Matches(props)
}
