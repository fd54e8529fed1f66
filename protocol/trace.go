package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// Message trace: a client with its trace hook on sends trace messages to
// TraceTopic. Each message's KEYS are the traced message ids (and their
// keys); its body is records, each ended by TraceFieldSplitter, whose
// fields are separated by TraceContentSplitter. The record's first field
// is its TraceType; the fields that follow depend on it, and newer clients
// append fields at the end (a Pub's clientHost, a SubAfter's timestamp and
// group), so a decoder takes the fields it knows and requires only those
// every client writes.

// Trace record separators.
const (
	TraceContentSplitter = '\x01'
	TraceFieldSplitter   = '\x02'
)

// TraceType is the kind of a trace record.
type TraceType string

// Trace record kinds.
const (
	TracePub            TraceType = "Pub"            // a send, with its outcome
	TraceSubBefore      TraceType = "SubBefore"      // a delivery handed to the listener
	TraceSubAfter       TraceType = "SubAfter"       // the listener's outcome
	TraceEndTransaction TraceType = "EndTransaction" // a transaction's decision (Java client)
)

// TraceRecord is one decoded trace record. Fields a record's type does not
// carry are zero.
type TraceRecord struct {
	Type        TraceType
	Timestamp   int64 // ms; a SubAfter from an older client has none
	RegionID    string
	Group       string // producer or consumer group
	Topic       string
	MsgID       string // the message's unique key (client message id)
	Tags        string
	Keys        string
	StoreHost   string
	BodyLength  int
	CostTime    int64 // ms
	MsgType     int   // 0 normal, 1 transactional half, 2 delay (client's numbering)
	OffsetMsgID string
	Success     bool
	ClientHost  string
	RequestID   string // links a SubBefore to its SubAfter
	RetryTimes  int
	ContextCode int // a SubAfter's consume outcome code

	TransactionID    string // EndTransaction only
	TransactionState string
	FromCheck        bool
}

// traceFields is the number of fields every client writes per type.
var traceFields = map[TraceType]int{TracePub: 12, TraceSubBefore: 8, TraceSubAfter: 6, TraceEndTransaction: 12}

// DecodeTraceRecords decodes a trace message's body. A record of an
// unknown type, with too few fields or with a field that is not a number
// where one is due is an error naming the record; nothing is guessed.
func DecodeTraceRecords(body []byte) ([]TraceRecord, error) {
	var out []TraceRecord
	for i, raw := range strings.Split(string(body), string(TraceFieldSplitter)) {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		f := strings.Split(raw, string(TraceContentSplitter))
		typ := TraceType(f[0])
		need, ok := traceFields[typ]
		if !ok {
			return out, fmt.Errorf("protocol: trace record %d: unknown type %.32q", i, f[0])
		}
		if len(f) < need {
			return out, fmt.Errorf("protocol: trace record %d (%s): %d fields, want at least %d", i, typ, len(f), need)
		}
		r, err := decodeTraceRecord(typ, &traceReader{f: f})
		if err != nil {
			return out, fmt.Errorf("protocol: trace record %d (%s): %w", i, typ, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func decodeTraceRecord(typ TraceType, rd *traceReader) (TraceRecord, error) {
	r := TraceRecord{Type: typ}
	switch typ {
	case TracePub:
		r.Timestamp, r.RegionID, r.Group, r.Topic, r.MsgID = rd.int64(1), rd.str(2), rd.str(3), rd.str(4), rd.str(5)
		r.Tags, r.Keys, r.StoreHost, r.BodyLength = rd.str(6), rd.str(7), rd.str(8), rd.int(9)
		r.CostTime, r.MsgType, r.OffsetMsgID = rd.int64(10), rd.int(11), rd.str(12)
		r.Success, r.ClientHost = rd.boolOr(13, true), rd.str(14)
	case TraceSubBefore:
		r.Timestamp, r.RegionID, r.Group, r.RequestID, r.MsgID = rd.int64(1), rd.str(2), rd.str(3), rd.str(4), rd.str(5)
		r.RetryTimes, r.Keys, r.ClientHost = rd.int(6), rd.str(7), rd.str(8)
	case TraceSubAfter:
		r.RequestID, r.MsgID, r.CostTime, r.Success, r.Keys = rd.str(1), rd.str(2), rd.int64(3), rd.boolOr(4, false), rd.str(5)
		r.ContextCode, r.Timestamp, r.Group = rd.intOr(6, 0), rd.int64Or(7, 0), rd.str(8)
	case TraceEndTransaction:
		r.Timestamp, r.RegionID, r.Group, r.Topic, r.MsgID = rd.int64(1), rd.str(2), rd.str(3), rd.str(4), rd.str(5)
		r.Tags, r.Keys, r.StoreHost, r.MsgType = rd.str(6), rd.str(7), rd.str(8), rd.int(9)
		r.TransactionID, r.TransactionState, r.FromCheck = rd.str(10), rd.str(11), rd.boolOr(12, false)
	}
	if r.Keys == "null" { // the clients write "null" for no keys
		r.Keys = ""
	}
	return r, rd.err
}

// traceReader reads a record's fields by index, keeping the first error.
type traceReader struct {
	f   []string
	err error
}

func (rd *traceReader) str(i int) string {
	if i < len(rd.f) {
		return rd.f[i]
	}
	return ""
}

func (rd *traceReader) fail(i int, what string) {
	if rd.err == nil {
		rd.err = fmt.Errorf("field %d is %.32q, not %s", i, rd.f[i], what)
	}
}

func (rd *traceReader) int64Or(i int, def int64) int64 {
	if i >= len(rd.f) || rd.f[i] == "" {
		return def
	}
	v, err := strconv.ParseInt(rd.f[i], 10, 64)
	if err != nil {
		rd.fail(i, "a number")
	}
	return v
}

func (rd *traceReader) int64(i int) int64 { return rd.int64Or(i, 0) }
func (rd *traceReader) int(i int) int     { return int(rd.int64Or(i, 0)) }
func (rd *traceReader) intOr(i, def int) int {
	return int(rd.int64Or(i, int64(def)))
}

func (rd *traceReader) boolOr(i int, def bool) bool {
	if i >= len(rd.f) || rd.f[i] == "" {
		return def
	}
	v, err := strconv.ParseBool(rd.f[i])
	if err != nil {
		rd.fail(i, "true or false")
	}
	return v
}

// Encode writes the record as the official Go client does (every field
// of the newest layout), ended by TraceFieldSplitter.
func (r TraceRecord) Encode() []byte {
	var f []string
	b := strconv.FormatBool
	switch r.Type {
	case TracePub:
		f = []string{string(r.Type), ltoa(r.Timestamp), r.RegionID, r.Group, r.Topic, r.MsgID, r.Tags, r.Keys, r.StoreHost,
			strconv.Itoa(r.BodyLength), ltoa(r.CostTime), strconv.Itoa(r.MsgType), r.OffsetMsgID, b(r.Success), r.ClientHost}
	case TraceSubBefore:
		f = []string{string(r.Type), ltoa(r.Timestamp), r.RegionID, r.Group, r.RequestID, r.MsgID,
			strconv.Itoa(r.RetryTimes), nullWrap(r.Keys), r.ClientHost}
	case TraceSubAfter:
		f = []string{string(r.Type), r.RequestID, r.MsgID, ltoa(r.CostTime), b(r.Success), nullWrap(r.Keys),
			strconv.Itoa(r.ContextCode), ltoa(r.Timestamp), r.Group}
	case TraceEndTransaction:
		f = []string{string(r.Type), ltoa(r.Timestamp), r.RegionID, r.Group, r.Topic, r.MsgID, r.Tags, r.Keys, r.StoreHost,
			strconv.Itoa(r.MsgType), r.TransactionID, r.TransactionState, b(r.FromCheck)}
	}
	return []byte(strings.Join(f, string(TraceContentSplitter)) + string(TraceFieldSplitter))
}

func nullWrap(s string) string {
	if s == "" {
		return "null"
	}
	return s
}
