package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/protocol"
)

func messageTrace(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	tr, err := a.QueryTrace(ctx, c.String("trace-topic"), c.String("id"), time.Now().Add(-c.Duration("since")), time.Time{})
	if err != nil {
		return err
	}
	if err := emit(c, toTraceJSON(tr), func() error { printTrace(c.App.Writer, tr); return nil }); err != nil {
		return err
	}
	if len(tr.Records) == 0 {
		return fmt.Errorf("no trace records of message %s in %s (is the clients' trace hook on?)", tr.MsgID, c.String("trace-topic"))
	}
	return nil
}

// printTrace writes one line per record: when, what, who, how long, and
// the record's details.
func printTrace(out io.Writer, tr *client.Trace) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tEVENT\tGROUP\tCLIENT\tCOST\tOK\tDETAIL")
	for _, r := range tr.Records {
		when := "-"
		if r.Timestamp > 0 {
			when = time.UnixMilli(r.Timestamp).Format("2006-01-02T15:04:05.000Z07:00")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", when, traceEvent(r.Type), r.Group, dash(r.ClientHost),
			cost(r), ok(r), traceDetail(r))
	}
	w.Flush()
	if tr.Undecodable > 0 {
		fmt.Fprintf(out, "(%d messages under this key were not trace records)\n", tr.Undecodable)
	}
}

func traceEvent(t protocol.TraceType) string {
	switch t {
	case protocol.TracePub:
		return "sent"
	case protocol.TraceSubBefore:
		return "delivered"
	case protocol.TraceSubAfter:
		return "consumed"
	case protocol.TraceEndTransaction:
		return "transaction"
	}
	return string(t)
}

func traceDetail(r protocol.TraceRecord) string {
	switch r.Type {
	case protocol.TracePub:
		return fmt.Sprintf("topic %s, %d bytes, tags %q, keys %q, stored on %s as %s", r.Topic, r.BodyLength, r.Tags, r.Keys, r.StoreHost, r.OffsetMsgID)
	case protocol.TraceSubBefore:
		return fmt.Sprintf("attempt %d, request %s", r.RetryTimes+1, r.RequestID)
	case protocol.TraceSubAfter:
		return fmt.Sprintf("outcome code %d, request %s", r.ContextCode, r.RequestID)
	case protocol.TraceEndTransaction:
		return fmt.Sprintf("%s (transaction %s, from check-back %t)", r.TransactionState, r.TransactionID, r.FromCheck)
	}
	return ""
}

func cost(r protocol.TraceRecord) string {
	if r.Type == protocol.TracePub || r.Type == protocol.TraceSubAfter {
		return strconv.FormatInt(r.CostTime, 10) + "ms"
	}
	return "-"
}

func ok(r protocol.TraceRecord) string {
	if r.Type == protocol.TracePub || r.Type == protocol.TraceSubAfter {
		return strconv.FormatBool(r.Success)
	}
	return "-"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// traceJSON is the JSON form of message trace.
type traceJSON struct {
	MsgID       string            `json:"msgId"`
	Records     []traceRecordJSON `json:"records"`
	Undecodable int               `json:"undecodable"`
}

// traceRecordJSON is one record of traceJSON, the fields of
// protocol.TraceRecord in lowerCamel; event is the table's name of its
// type (sent, delivered, consumed, transaction).
type traceRecordJSON struct {
	Type             string `json:"type"`
	Event            string `json:"event"`
	Timestamp        int64  `json:"timestamp"`
	RegionID         string `json:"regionId"`
	Group            string `json:"group"`
	Topic            string `json:"topic"`
	MsgID            string `json:"msgId"`
	Tags             string `json:"tags"`
	Keys             string `json:"keys"`
	StoreHost        string `json:"storeHost"`
	BodyLength       int    `json:"bodyLength"`
	CostTime         int64  `json:"costTime"`
	MsgType          int    `json:"msgType"`
	OffsetMsgID      string `json:"offsetMsgId"`
	Success          bool   `json:"success"`
	ClientHost       string `json:"clientHost"`
	RequestID        string `json:"requestId"`
	RetryTimes       int    `json:"retryTimes"`
	ContextCode      int    `json:"contextCode"`
	TransactionID    string `json:"transactionId,omitempty"`
	TransactionState string `json:"transactionState,omitempty"`
	FromCheck        bool   `json:"fromCheck,omitempty"`
}

func toTraceJSON(tr *client.Trace) traceJSON {
	out := traceJSON{MsgID: tr.MsgID, Records: make([]traceRecordJSON, 0, len(tr.Records)), Undecodable: tr.Undecodable}
	for _, r := range tr.Records {
		out.Records = append(out.Records, traceRecordJSON{Type: string(r.Type), Event: traceEvent(r.Type), Timestamp: r.Timestamp,
			RegionID: r.RegionID, Group: r.Group, Topic: r.Topic, MsgID: r.MsgID, Tags: r.Tags, Keys: r.Keys, StoreHost: r.StoreHost,
			BodyLength: r.BodyLength, CostTime: r.CostTime, MsgType: r.MsgType, OffsetMsgID: r.OffsetMsgID, Success: r.Success,
			ClientHost: r.ClientHost, RequestID: r.RequestID, RetryTimes: r.RetryTimes, ContextCode: r.ContextCode,
			TransactionID: r.TransactionID, TransactionState: r.TransactionState, FromCheck: r.FromCheck})
	}
	return out
}
