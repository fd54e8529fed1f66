package cli

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
)

func groupCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "group",
		Usage: "inspect consumer groups",
		Subcommands: []*ucli.Command{{
			Name:  "progress",
			Usage: "per queue: broker max offset, the group's committed offset and the lag",
			Flags: []ucli.Flag{namesrvFlag(),
				&ucli.StringFlag{Name: "group", Aliases: []string{"g"}, Required: true},
				&ucli.StringSliceFlag{Name: "topic", Aliases: []string{"t"}, Usage: "only these topics (default all with an offset)"}},
			Action: withAdmin(groupProgress),
		}},
	}
}

func groupProgress(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	prog, err := a.ConsumerGroupProgress(ctx, c.String("group"), c.StringSlice("topic")...)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tBROKER\tQUEUE\tBROKER OFFSET\tCONSUMER OFFSET\tLAG")
	var total int64
	for _, p := range prog {
		co := strconv.FormatInt(p.ConsumerOffset, 10)
		if p.ConsumerOffset < 0 {
			co = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%d\n", p.Queue.Topic, p.Queue.BrokerName, p.Queue.QueueID, p.BrokerOffset, co, p.Lag)
		total += p.Lag
	}
	fmt.Fprintf(w, "total lag\t\t\t\t\t%d\n", total)
	return w.Flush()
}
