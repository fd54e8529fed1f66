package protocol

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Client registration: the HEART_BEAT body and the names in it, as
// RocketMQ's HeartbeatData, ProducerData, ConsumerData and
// SubscriptionData.

// Consume types, message models and starting points, as RocketMQ's
// ConsumeType, MessageModel and ConsumeFromWhere names.
const (
	ConsumeActively  = "CONSUME_ACTIVELY"  // pull consumers
	ConsumePassively = "CONSUME_PASSIVELY" // push consumers

	Clustering   = "CLUSTERING"
	Broadcasting = "BROADCASTING"

	ConsumeFromLastOffset  = "CONSUME_FROM_LAST_OFFSET"
	ConsumeFromFirstOffset = "CONSUME_FROM_FIRST_OFFSET"
	ConsumeFromTimestamp   = "CONSUME_FROM_TIMESTAMP"
)

// HeartbeatData is the HEART_BEAT body.
type HeartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []ProducerData `json:"producerDataSet"`
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
}

// ProducerData names one producer group in a heartbeat.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData is one consumer group in a heartbeat.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         string             `json:"consumeType"`
	MessageModel        string             `json:"messageModel"`
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// SubscriptionData is one subscription of a consumer group.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         CodeSet  `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"`
}

// CodeSet is a subscription's tag hashes. The Go client sends them as
// decimal strings, the Java client as numbers; both decode, and it
// encodes as strings. A set with an element that is neither decodes as
// nil rather than failing the heartbeat: the hashes can be computed from
// the expression (SubscriptionData.SubString) instead.
type CodeSet []int64

// MarshalJSON writes the hashes as decimal strings.
func (c CodeSet) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for i, v := range c {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, v, 10)
		b = append(b, '"')
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads strings or numbers.
func (c *CodeSet) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(CodeSet, 0, len(raw))
	for _, r := range raw {
		var s string
		if err := json.Unmarshal(r, &s); err == nil {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				*c = nil
				return nil
			}
			out = append(out, n)
			continue
		}
		var n int64
		if err := json.Unmarshal(r, &n); err != nil {
			*c = nil
			return nil
		}
		out = append(out, n)
	}
	*c = out
	return nil
}

// ConsumerListBody is the GET_CONSUMER_LIST_BY_GROUP answer
// (GetConsumerListByGroupResponseBody).
type ConsumerListBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}
