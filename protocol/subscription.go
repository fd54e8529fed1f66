package protocol

import (
	"fmt"
	"slices"
	"strings"
)

// Subscription expressions, as RocketMQ's ExpressionType and
// SubscriptionData.
const (
	// ExprTag is a tag expression: "*" or tags separated by "||".
	ExprTag = "TAG"
	// ExprSQL92 is an SQL92 expression over message properties.
	ExprSQL92 = "SQL92"
	// SubAll subscribes to every tag.
	SubAll = "*"
	// TagSeparator separates the tags of a tag expression.
	TagSeparator = "||"
)

// ParseTagExpression parses a tag expression as RocketMQ's
// FilterAPI.buildSubscriptionData: "" or "*" (all is true) or tags
// separated by "||", each trimmed, empty ones dropped, duplicates once in
// first-seen order. An expression with separators but no tag is an error.
func ParseTagExpression(expr string) (tags []string, all bool, err error) {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == SubAll {
		return nil, true, nil
	}
	for _, t := range strings.Split(expr, TagSeparator) {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	if len(tags) == 0 {
		return nil, false, fmt.Errorf("subscription expression %q has no tag", expr)
	}
	return tags, false, nil
}
