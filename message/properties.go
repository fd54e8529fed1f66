package message

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Property separators, frozen by the RocketMQ wire format.
const (
	NameValueSeparator = '\x01'
	PropertySeparator  = '\x02'
)

// MaxPropertiesLen is the largest encoded property block: PROPLEN is read
// as a signed 16-bit integer by Java brokers and clients.
const MaxPropertiesLen = 32767

// ValidateProperties reports the first key or value that cannot be encoded:
// an empty key, or a key or value containing a separator byte.
func ValidateProperties(props map[string]string) error {
	for k, v := range props {
		if k == "" {
			return fmt.Errorf("%w: empty key", ErrBadProperty)
		}
		if hasSeparator(k) {
			return fmt.Errorf("%w: key %q contains a separator", ErrBadProperty, k)
		}
		if hasSeparator(v) {
			return fmt.Errorf("%w: value of %q contains a separator", ErrBadProperty, k)
		}
	}
	return nil
}

func hasSeparator(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == NameValueSeparator || s[i] == PropertySeparator {
			return true
		}
	}
	return false
}

// PropertiesLen returns the encoded length of props without encoding them.
func PropertiesLen(props map[string]string) int {
	n := 0
	for k, v := range props {
		n += len(k) + len(v) + 2
	}
	return n
}

// EncodeProperties returns props as key\x01value\x02 pairs, keys sorted so
// that equal maps give equal bytes (records are compared and hashed across
// replicas). It does not validate; see ValidateProperties.
func EncodeProperties(props map[string]string) []byte {
	return AppendProperties(make([]byte, 0, PropertiesLen(props)), props)
}

// AppendProperties appends the encoding of props to dst, as EncodeProperties.
func AppendProperties(dst []byte, props map[string]string) []byte {
	if len(props) == 0 {
		return dst
	}
	// Messages carry a handful of properties; a stack buffer keeps the
	// sort from allocating on the broker's hot path.
	var buf [16]string
	for _, k := range sortedKeys(buf[:0], props) {
		dst = append(dst, k...)
		dst = append(dst, NameValueSeparator)
		dst = append(dst, props[k]...)
		dst = append(dst, PropertySeparator)
	}
	return dst
}

func sortedKeys(keys []string, props map[string]string) []string {
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// DecodeProperties parses key\x01value\x02 pairs. Like the Java decoder it
// accepts a missing final \x02 and skips empty items (\x02\x02); a later
// duplicate key wins. An item without \x01, with an empty key, or with a
// second \x01 is ErrMalformedProperties: no conforming encoder produces it,
// and accepting it would make re-encoding lossy. Input without any pair
// gives a nil map, so an encode/decode round trip of nil stays nil.
//
// The values are cut from one string of b (one allocation for all of
// them) and the keys RocketMQ defines are its constants, not copies.
func DecodeProperties(b []byte) (map[string]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	props := make(map[string]string, bytes.Count(b, []byte{PropertySeparator})+1)
	all := string(b)
	for s := all; len(s) > 0; {
		item := s
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			item, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if len(item) == 0 {
			continue
		}
		k, v, ok := strings.Cut(item, string(rune(NameValueSeparator)))
		if !ok || len(k) == 0 || strings.IndexByte(v, NameValueSeparator) >= 0 {
			return nil, fmt.Errorf("%w: item %q", ErrMalformedProperties, item)
		}
		if c, ok := knownKeys[k]; ok {
			k = c
		}
		props[k] = v
	}
	if len(props) == 0 {
		return nil, nil
	}
	return props, nil
}

// knownKeys maps each property name RocketMQ defines to its constant, so
// decoded maps share the constants' bytes.
var knownKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{PropertyTags, PropertyKeys, PropertyDelayLevel, PropertyUniqKey, PropertyWaitStoreMsgOK,
		PropertyRetryTopic, PropertyOriginMessageID, PropertyRealTopic, PropertyRealQueueID, PropertyTransactionPrepared,
		PropertyProducerGroup, PropertyMaxReconsumeTimes, PropertyReconsumeTime, PropertyTimerDeliverMS,
		PropertyTimerDelaySec, PropertyShardingKey, PropertyCluster, PropertyMsgRegion, PropertyTraceOn,
		PropertyMinOffset, PropertyMaxOffset, PropertyTransactionPreparedQueueOffset, PropertyTransactionCheckTimes,
		PropertyCheckImmunityTimeInSeconds, PropertyTransactionID, PropertyConsumeStartTime, PropertyCorrelationID,
		PropertyReplyToClient, PropertyTTL, PropertyArriveTime, PropertyMsgType} {
		m[k] = k
	}
	return m
}()
