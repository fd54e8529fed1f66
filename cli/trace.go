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
	printTrace(c.App.Writer, tr)
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
