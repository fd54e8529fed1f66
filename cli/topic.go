package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/protocol"
)

func topicCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "topic",
		Usage: "create, list, inspect and delete topics",
		Subcommands: []*ucli.Command{
			{
				Name:  "create",
				Usage: "create or update a topic on every broker group of a cluster",
				Flags: []ucli.Flag{
					namesrvFlag(), topicFlag(),
					&ucli.IntFlag{Name: "queues", Aliases: []string{"q"}, Value: 8, Usage: "read and write queue count"},
					&ucli.IntFlag{Name: "perm", Value: 6, Usage: "permission bits: 4 read, 2 write"},
					clusterFlag(),
					&ucli.BoolFlag{Name: "order", Usage: "mark the topic as ordered"},
					&ucli.StringFlag{Name: "groups", Aliases: []string{"g"}, Usage: "only these broker groups, comma-separated (default every group of the cluster)"},
				},
				Action: withAdmin(topicCreate),
			},
			{
				Name:  "update",
				Usage: "extend an existing topic onto more broker groups, with its queue count and permission",
				Flags: []ucli.Flag{namesrvFlag(), topicFlag(),
					&ucli.StringFlag{Name: "add-group", Required: true, Usage: "broker group(s) to add, comma-separated"}},
				Action: withAdmin(topicUpdate),
			},
			{
				Name:   "list",
				Usage:  "list every topic the name server knows",
				Flags:  []ucli.Flag{namesrvFlag(), outputFlag()},
				Action: withAdmin(topicList),
			},
			{
				Name:   "route",
				Usage:  "show a topic's route: queues per broker group and the group's nodes",
				Flags:  []ucli.Flag{namesrvFlag(), topicFlag(), outputFlag()},
				Action: withAdmin(topicRoute),
			},
			{
				Name:  "delete",
				Usage: "delete a topic from every broker group of a cluster and from the name servers",
				Flags: []ucli.Flag{namesrvFlag(), topicFlag(),
					clusterFlag()},
				Action: withAdmin(topicDelete),
			},
		},
	}
}

func topicCreate(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	placed, err := a.CreateTopic(ctx, client.TopicConfig{Topic: c.String("topic"), Queues: c.Int("queues"),
		Perm: c.Int("perm"), Order: c.Bool("order"), Cluster: c.String("cluster"), Groups: splitList(c.String("groups"))})
	for _, p := range placed {
		fmt.Fprintf(c.App.Writer, "created topic %s on %s (%s, %d queues)\n", c.String("topic"), p.BrokerName, p.Addr, c.Int("queues"))
	}
	return err
}

func topicUpdate(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	placed, err := a.ExtendTopic(ctx, c.String("topic"), splitList(c.String("add-group"))...)
	for _, p := range placed {
		fmt.Fprintf(c.App.Writer, "topic %s now on %s (%s)\n", c.String("topic"), p.BrokerName, p.Addr)
	}
	return err
}

func topicDelete(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	placed, err := a.DeleteTopic(ctx, c.String("topic"), c.String("cluster"))
	for _, p := range placed {
		fmt.Fprintf(c.App.Writer, "deleted topic %s from %s (%s)\n", c.String("topic"), p.BrokerName, p.Addr)
	}
	if err == nil {
		fmt.Fprintf(c.App.Writer, "deleted topic %s from the name servers\n", c.String("topic"))
	}
	return err
}

func topicList(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	topics, err := a.ListTopics(ctx)
	if err != nil {
		return err
	}
	if topics == nil {
		topics = []string{}
	}
	return emit(c, topics, func() error {
		for _, t := range topics {
			fmt.Fprintln(c.App.Writer, t)
		}
		return nil
	})
}

func topicRoute(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	rd, err := a.Route(ctx, c.String("topic"))
	if err != nil {
		return err
	}
	return emit(c, rd, func() error { return printRoute(c.App.Writer, rd) })
}

// printRoute is the table form of a topic route.
func printRoute(out io.Writer, rd *protocol.TopicRouteData) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "BROKER\tREAD\tWRITE\tPERM\tNODES (0 = leader)")
	for _, q := range rd.QueueDatas {
		nodes := ""
		for _, bd := range rd.BrokerDatas {
			if bd.BrokerName == q.BrokerName {
				nodes = formatAddrs(bd.BrokerAddrs)
			}
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", q.BrokerName, q.ReadQueueNums, q.WriteQueueNums, q.Perm, nodes)
	}
	return w.Flush()
}
