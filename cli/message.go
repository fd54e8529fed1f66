package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

func messageCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "message",
		Usage: "look messages up",
		Subcommands: []*ucli.Command{
			{
				Name:  "query",
				Usage: "find a topic's messages by key",
				Flags: []ucli.Flag{namesrvFlag(), topicFlag(),
					&ucli.StringFlag{Name: "key", Aliases: []string{"k"}, Required: true},
					&ucli.DurationFlag{Name: "since", Value: 72 * time.Hour, Usage: "how far back to look"},
					&ucli.IntFlag{Name: "max", Value: 32, Usage: "at most this many per broker group"}},
				Action: withAdmin(messageQuery),
			},
			{
				Name:   "view",
				Usage:  "show a message by its offset message id (the send result's offsetMsgId)",
				Flags:  []ucli.Flag{namesrvFlag(), &ucli.StringFlag{Name: "id", Required: true}},
				Action: withAdmin(messageView),
			},
			{
				Name:  "trace",
				Usage: "print a message's send and consume timeline from the clients' trace records",
				Flags: []ucli.Flag{namesrvFlag(),
					&ucli.StringFlag{Name: "id", Required: true, Usage: "the message id (the send result's msgId, its unique key)"},
					&ucli.StringFlag{Name: "trace-topic", Value: protocol.TraceTopic, Usage: "the topic the trace hooks write to"},
					&ucli.DurationFlag{Name: "since", Value: 72 * time.Hour, Usage: "how far back to look"}},
				Action: withAdmin(messageTrace),
			},
		},
	}
}

func messageQuery(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	msgs, err := a.QueryMessageByKey(ctx, c.String("topic"), c.String("key"), time.Now().Add(-c.Duration("since")), time.Time{}, c.Int("max"))
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "MSGID\tOFFSET MSGID\tQUEUE\tOFFSET\tSTORED\tTAGS\tKEYS")
	for _, m := range msgs {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", m.UniqKey(), m.MsgID(), m.QueueID, m.QueueOffset,
			time.UnixMilli(m.StoreTimestamp).Format(time.RFC3339Nano), m.Tags(), strings.Join(m.Keys(), " "))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return fmt.Errorf("no message of %s with key %q", c.String("topic"), c.String("key"))
	}
	return nil
}

func messageView(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	m, err := a.ViewMessageByID(ctx, c.String("id"))
	if err != nil {
		return err
	}
	printMessage(c.App.Writer, m)
	return nil
}

func printMessage(out io.Writer, m *message.MessageExt) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "topic:\t%s\n", m.Topic)
	fmt.Fprintf(w, "msgId:\t%s\n", m.UniqKey())
	fmt.Fprintf(w, "offsetMsgId:\t%s\n", m.MsgID())
	fmt.Fprintf(w, "queue:\t%d\n", m.QueueID)
	fmt.Fprintf(w, "queue offset:\t%d\n", m.QueueOffset)
	fmt.Fprintf(w, "tags:\t%s\n", m.Tags())
	fmt.Fprintf(w, "keys:\t%s\n", strings.Join(m.Keys(), " "))
	fmt.Fprintf(w, "born:\t%s at %s\n", m.BornHost, time.UnixMilli(m.BornTimestamp).Format(time.RFC3339Nano))
	fmt.Fprintf(w, "stored:\t%s at %s\n", m.StoreHost, time.UnixMilli(m.StoreTimestamp).Format(time.RFC3339Nano))
	fmt.Fprintf(w, "reconsume times:\t%d\n", m.ReconsumeTimes)
	for _, k := range slices.Sorted(maps.Keys(m.Properties)) {
		fmt.Fprintf(w, "property %s:\t%s\n", k, m.Properties[k])
	}
	fmt.Fprintf(w, "body (%d bytes):\t%s\n", len(m.Body), m.Body)
	w.Flush()
}
