package message

import (
	"strconv"
	"strings"
)

// Property keys understood by RocketMQ 4.x clients and brokers. The strings
// are part of the wire protocol and frozen.
const (
	PropertyTags                           = "TAGS"                           // filter tag(s); hashed into the consumequeue
	PropertyKeys                           = "KEYS"                           // space-separated business keys, indexed
	PropertyDelayLevel                     = "DELAY"                          // delay level 1..18
	PropertyUniqKey                        = "UNIQ_KEY"                       // client-assigned message id
	PropertyWaitStoreMsgOK                 = "WAIT"                           // "true": answer after the message is stored
	PropertyRetryTopic                     = "RETRY_TOPIC"                    // original topic of a retried message
	PropertyOriginMessageID                = "ORIGIN_MESSAGE_ID"              // msgId of the first delivery of a retry
	PropertyRealTopic                      = "REAL_TOPIC"                     // topic of a delayed or half message
	PropertyRealQueueID                    = "REAL_QID"                       // queue of a delayed or half message
	PropertyTransactionPrepared            = "TRAN_MSG"                       // "true": half message
	PropertyProducerGroup                  = "PGROUP"                         // producer group of a half message
	PropertyMaxReconsumeTimes              = "MAX_RECONSUME_TIMES"            // retries before the DLQ
	PropertyReconsumeTime                  = "RECONSUME_TIME"                 // retry count carried by a retry message
	PropertyTimerDeliverMS                 = "TIMER_DELIVER_MS"               // timer message: deliver at this Unix ms
	PropertyTimerDelaySec                  = "TIMER_DELAY_SEC"                // timer message: deliver after seconds
	PropertyShardingKey                    = "SHARDING_KEY"                   // ordering key
	PropertyCluster                        = "CLUSTER"                        // cluster name (replies, traces)
	PropertyMsgRegion                      = "MSG_REGION"                     // region id
	PropertyTraceOn                        = "TRACE_ON"                       // "false" disables tracing
	PropertyMinOffset                      = "MIN_OFFSET"                     // queue min offset, set on pulled messages
	PropertyMaxOffset                      = "MAX_OFFSET"                     // queue max offset, set on pulled messages
	PropertyTransactionPreparedQueueOffset = "TRAN_PREPARED_QUEUE_OFFSET"     // queue offset of the half message
	PropertyTransactionCheckTimes          = "TRANSACTION_CHECK_TIMES"        // check-backs done so far
	PropertyCheckImmunityTimeInSeconds     = "CHECK_IMMUNITY_TIME_IN_SECONDS" // first check-back delay
	PropertyTransactionID                  = "__transactionId__"              // transaction id
	PropertyConsumeStartTime               = "CONSUME_START_TIME"             // client-side consume start, ms
	PropertyBuyerID                        = "BUYER_ID"                       // legacy
	PropertyTransferFlag                   = "TRANSFER_FLAG"                  // legacy
	PropertyCorrectionFlag                 = "CORRECTION_FLAG"                // legacy
	PropertyCorrelationID                  = "CORRELATION_ID"                 // request/reply correlation
	PropertyReplyToClient                  = "REPLY_TO_CLIENT"                // request/reply: requester client id
	PropertyTTL                            = "TTL"                            // request/reply: timeout
	PropertyArriveTime                     = "ARRIVE_TIME"                    // request/reply: arrival time
	PropertyMsgType                        = "MSG_TYPE"                       // "reply" for reply messages

	keySeparator = " "
)

// Message is what a producer sends: a topic, an application flag, string
// properties and an opaque body. TransactionID travels in request headers,
// not in the encoded layouts, so the codecs of this package leave it alone.
type Message struct {
	Topic         string
	Flag          int32
	Properties    map[string]string
	Body          []byte
	TransactionID string
}

// Property returns the value of key, or "" when it is not set.
func (m *Message) Property(key string) string {
	return m.Properties[key]
}

// SetProperty sets key to value, allocating the map on first use.
func (m *Message) SetProperty(key, value string) {
	if m.Properties == nil {
		m.Properties = make(map[string]string)
	}
	m.Properties[key] = value
}

// RemoveProperty deletes key and returns its previous value.
func (m *Message) RemoveProperty(key string) string {
	v := m.Properties[key]
	delete(m.Properties, key)
	return v
}

// setOrRemove keeps empty values out of the map: RocketMQ clients treat an
// empty property as absent, so storing one would only waste bytes.
func (m *Message) setOrRemove(key, value string) {
	if value == "" {
		m.RemoveProperty(key)
		return
	}
	m.SetProperty(key, value)
}

// Tags returns the TAGS property.
func (m *Message) Tags() string { return m.Property(PropertyTags) }

// SetTags sets the TAGS property; "" removes it.
func (m *Message) SetTags(tags string) { m.setOrRemove(PropertyTags, tags) }

// Keys returns the space-separated KEYS property split into its keys, or
// nil when there are none.
func (m *Message) Keys() []string {
	keys := strings.Fields(m.Property(PropertyKeys))
	if len(keys) == 0 {
		return nil
	}
	return keys
}

// SetKeys sets KEYS to keys joined by single spaces, as the clients do; an
// empty slice removes the property.
func (m *Message) SetKeys(keys []string) {
	m.setOrRemove(PropertyKeys, strings.Join(keys, keySeparator))
}

// DelayLevel returns the DELAY property, or 0 when it is unset or not a
// number (RocketMQ treats both as "no delay").
func (m *Message) DelayLevel() int {
	n, err := strconv.Atoi(m.Property(PropertyDelayLevel))
	if err != nil {
		return 0
	}
	return n
}

// SetDelayLevel sets the DELAY property; level 0 or less removes it.
func (m *Message) SetDelayLevel(level int) {
	if level <= 0 {
		m.RemoveProperty(PropertyDelayLevel)
		return
	}
	m.SetProperty(PropertyDelayLevel, strconv.Itoa(level))
}

// UniqKey returns the client-assigned UNIQ_KEY property (the msgId clients
// show to users).
func (m *Message) UniqKey() string { return m.Property(PropertyUniqKey) }

// SetUniqKey sets the UNIQ_KEY property; "" removes it.
func (m *Message) SetUniqKey(key string) { m.setOrRemove(PropertyUniqKey, key) }
