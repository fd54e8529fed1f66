package broker

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/raftmq/raftmq/message"
)

// Subscription expressions, as RocketMQ's SubscriptionData and
// ExpressionType.
const (
	subAll      = "*"
	exprTag     = "TAG"
	exprSQL92   = "SQL92"
	tagSplitter = "||"
)

// subscriptionData is one subscription of a heartbeat's consumer data.
// codeSet holds tag hashes, as strings from the Go client and numbers
// from the Java client, so it is decoded loosely.
type subscriptionData struct {
	ClassFilterMode bool              `json:"classFilterMode"`
	Topic           string            `json:"topic"`
	SubString       string            `json:"subString"`
	TagsSet         []string          `json:"tagsSet"`
	CodeSet         []json.RawMessage `json:"codeSet"`
	SubVersion      int64             `json:"subVersion"`
	ExpressionType  string            `json:"expressionType"`
}

// subscription is a parsed subscription: which tag hashes a consumer of a
// topic wants.
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

// parse turns heartbeat subscription data into a filter. The tag hashes
// are taken from the codeSet when it parses, and computed from the
// expression otherwise.
func (sd subscriptionData) parse() *subscription {
	s, err := parseSubscription(sd.Topic, sd.SubString, sd.ExpressionType)
	if err != nil {
		// Not a TAG expression (SQL92): the broker cannot filter it;
		// deliver everything and let the client filter.
		s = &subscription{Topic: sd.Topic, SubString: sd.SubString, ExpressionType: sd.ExpressionType, all: true}
	}
	s.SubVersion, s.ClassFilter = sd.SubVersion, sd.ClassFilterMode
	if !s.all && len(sd.CodeSet) > 0 {
		codes := map[int64]bool{}
		for _, raw := range sd.CodeSet {
			c, err := parseCode(raw)
			if err != nil {
				return s
			}
			codes[c] = true
		}
		s.codes = codes
	}
	return s
}

func parseCode(raw json.RawMessage) (int64, error) {
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		return strconv.ParseInt(strings.TrimSpace(str), 10, 64)
	}
	var n int64
	err := json.Unmarshal(raw, &n)
	return n, err
}

// parseSubscription parses a TAG expression ("*", "", or "A || B"), as
// RocketMQ's FilterAPI.buildSubscriptionData. Other expression types are
// refused: this broker filters by tag only.
func parseSubscription(topic, expr, exprType string) (*subscription, error) {
	if exprType == "" {
		exprType = exprTag
	}
	s := &subscription{Topic: topic, SubString: expr, ExpressionType: exprType}
	if exprType != exprTag {
		return nil, fmt.Errorf("the broker does not support consumer to filter message by %s", exprType)
	}
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == subAll {
		s.SubString, s.all = subAll, true
		return s, nil
	}
	s.codes = map[int64]bool{}
	for _, tag := range strings.Split(expr, tagSplitter) {
		tag = strings.TrimSpace(tag)
		if tag == "" {
			continue
		}
		s.tags = append(s.tags, tag)
		s.codes[message.TagsHashCode(tag)] = true
	}
	if len(s.tags) == 0 {
		return nil, fmt.Errorf("subscription expression %q has no tag", expr)
	}
	return s, nil
}

// matches reports whether a consumequeue entry's tag hash passes the
// filter (RocketMQ's ExpressionMessageFilter.isMatchedByConsumeQueue).
// A nil subscription matches everything.
func (s *subscription) matches(tagsCode int64) bool {
	if s == nil || s.all || s.ClassFilter {
		return true
	}
	return s.codes[tagsCode]
}
