package client

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/raftmq/raftmq/protocol"
)

// Trace is a message's trace timeline: the records the clients' trace
// hooks wrote about it, oldest first.
type Trace struct {
	MsgID   string
	Records []protocol.TraceRecord
	// Undecodable counts trace messages under the id's key whose body
	// is not trace records (written by something else); they are skipped.
	Undecodable int
}

// QueryTrace looks up the trace of the message with unique key (client
// message id) msgID in traceTopic (protocol.TraceTopic when empty): the
// trace messages stored in [begin, end] whose keys hold msgID. A SubAfter
// record from a client that writes no timestamp gets its SubBefore's
// (same request id) plus its cost, so the timeline sorts.
func (a *Admin) QueryTrace(ctx context.Context, traceTopic, msgID string, begin, end time.Time) (*Trace, error) {
	if traceTopic == "" {
		traceTopic = protocol.TraceTopic
	}
	msgs, err := a.QueryMessageByKey(ctx, traceTopic, msgID, begin, end, 64)
	if err != nil {
		return nil, err
	}
	tr := &Trace{MsgID: msgID}
	for _, m := range msgs {
		rs, err := protocol.DecodeTraceRecords(m.Body)
		if err != nil && len(rs) == 0 {
			tr.Undecodable++
			continue
		}
		for _, r := range rs {
			if r.MsgID == msgID {
				tr.Records = append(tr.Records, r)
			}
		}
	}
	fillSubAfterTimes(tr.Records)
	slices.SortStableFunc(tr.Records, func(x, y protocol.TraceRecord) int {
		return cmp.Or(cmp.Compare(x.Timestamp, y.Timestamp), cmp.Compare(traceOrder(x.Type), traceOrder(y.Type)))
	})
	return tr, nil
}

// fillSubAfterTimes dates and names the group of SubAfter records that
// carry neither, from their SubBefore.
func fillSubAfterTimes(rs []protocol.TraceRecord) {
	before := map[string]protocol.TraceRecord{}
	for _, r := range rs {
		if r.Type == protocol.TraceSubBefore {
			before[r.RequestID] = r
		}
	}
	for i := range rs {
		r := &rs[i]
		b, ok := before[r.RequestID]
		if r.Type != protocol.TraceSubAfter || !ok {
			continue
		}
		if r.Timestamp == 0 {
			r.Timestamp = b.Timestamp + r.CostTime
		}
		if r.Group == "" {
			r.Group = b.Group
		}
	}
}

// traceOrder breaks timestamp ties in the order things happen.
func traceOrder(t protocol.TraceType) int {
	switch t {
	case protocol.TracePub:
		return 0
	case protocol.TraceEndTransaction:
		return 1
	case protocol.TraceSubBefore:
		return 2
	default:
		return 3
	}
}
