package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/protocol"
)

func topicCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "topic",
		Usage: "create, list, inspect, change and delete topics (mqadmin updateTopic, topicList, topicRoute, topicStatus, updateTopicPerm, deleteTopic)",
		Subcommands: []*ucli.Command{
			{
				Name:  "create",
				Usage: "create or update a topic on every broker group of a cluster (mqadmin updateTopic)",
				Flags: []ucli.Flag{
					namesrvFlag(), topicFlag(),
					&ucli.IntFlag{Name: "queues", Aliases: []string{"q"}, Value: 8, Usage: "read and write queue count"},
					&ucli.IntFlag{Name: "perm", Value: 6, Usage: "permission bits: 4 read, 2 write"},
					clusterFlag(),
					&ucli.BoolFlag{Name: "order", Usage: "mark the topic as ordered"},
					&ucli.StringFlag{Name: "groups", Aliases: []string{"g"}, Usage: "only these broker groups, comma-separated (default every group of the cluster)"},
					outputFlag(),
				},
				Action: withAdmin(topicCreate),
			},
			{
				Name:  "update",
				Usage: "extend an existing topic onto more broker groups, with its queue count and permission (mqadmin updateTopic -b)",
				Flags: []ucli.Flag{namesrvFlag(), topicFlag(),
					&ucli.StringFlag{Name: "add-group", Required: true, Usage: "broker group(s) to add, comma-separated"}, outputFlag()},
				Action: withAdmin(topicUpdate),
			},
			{
				Name:   "list",
				Usage:  "list every topic the name server knows (mqadmin topicList)",
				Flags:  []ucli.Flag{namesrvFlag(), outputFlag()},
				Action: withAdmin(topicList),
			},
			{
				Name:   "route",
				Usage:  "show a topic's route: queues per broker group and the group's nodes (mqadmin topicRoute)",
				Flags:  []ucli.Flag{namesrvFlag(), topicFlag(), outputFlag()},
				Action: withAdmin(topicRoute),
			},
			{
				Name:   "status",
				Usage:  "show each queue's min and max offset and the store time of its last message, on every broker group (mqadmin topicStatus)",
				Flags:  []ucli.Flag{namesrvFlag(), topicFlag(), outputFlag()},
				Action: withAdmin(topicStatus),
			},
			{
				Name:  "perm",
				Usage: "set a topic's permission on every broker group that holds it, keeping its queue counts (mqadmin updateTopicPerm)",
				Flags: []ucli.Flag{namesrvFlag(), topicFlag(),
					&ucli.IntFlag{Name: "perm", Aliases: []string{"p"}, Required: true, Usage: "2 write only, 4 read only, 6 read and write"},
					outputFlag()},
				Action: withAdmin(topicPerm),
			},
			{
				Name:  "delete",
				Usage: "delete a topic from every broker group of a cluster and from the name servers (mqadmin deleteTopic)",
				Flags: []ucli.Flag{namesrvFlag(), topicFlag(),
					clusterFlag(), outputFlag()},
				Action: withAdmin(topicDelete),
			},
		},
	}
}

// placementJSON is the JSON form of one broker group a topic command
// changed.
type placementJSON struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	Addr       string `json:"addr"`
	Perm       int    `json:"perm,omitempty"`
}

// emitPlacements is reportPlacements with a topic command's JSON rows
// (the topic and its perm beside each group).
func emitPlacements(c *ucli.Context, placed []client.Placement, perm int, err error, line func(client.Placement) string) error {
	out := make([]placementJSON, 0, len(placed))
	for _, p := range placed {
		out = append(out, placementJSON{Topic: c.String("topic"), BrokerName: p.BrokerName, Addr: p.Addr, Perm: perm})
	}
	return reportPlacements(c, out, placed, err, line)
}

func topicCreate(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	placed, err := a.CreateTopic(ctx, client.TopicConfig{Topic: c.String("topic"), Queues: c.Int("queues"),
		Perm: c.Int("perm"), Order: c.Bool("order"), Cluster: c.String("cluster"), Groups: splitList(c.String("groups"))})
	return emitPlacements(c, placed, c.Int("perm"), err, func(p client.Placement) string {
		return fmt.Sprintf("created topic %s on %s (%s, %d queues)", c.String("topic"), p.BrokerName, p.Addr, c.Int("queues"))
	})
}

func topicUpdate(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	placed, err := a.ExtendTopic(ctx, c.String("topic"), splitList(c.String("add-group"))...)
	return emitPlacements(c, placed, 0, err, func(p client.Placement) string {
		return fmt.Sprintf("topic %s now on %s (%s)", c.String("topic"), p.BrokerName, p.Addr)
	})
}

func topicDelete(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	js, err := jsonOutput(c)
	if err != nil {
		return err
	}
	placed, err := a.DeleteTopic(ctx, c.String("topic"), c.String("cluster"))
	if err := emitPlacements(c, placed, 0, err, func(p client.Placement) string {
		return fmt.Sprintf("deleted topic %s from %s (%s)", c.String("topic"), p.BrokerName, p.Addr)
	}); err != nil || js {
		return err
	}
	fmt.Fprintf(c.App.Writer, "deleted topic %s from the name servers\n", c.String("topic"))
	return nil
}

func topicPerm(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	perm := c.Int("perm")
	if !client.ValidTopicPerm(perm) {
		return fmt.Errorf("--perm %d: want 2 (write only), 4 (read only) or 6 (read and write)", perm)
	}
	placed, err := a.SetTopicPerm(ctx, c.String("topic"), perm)
	return emitPlacements(c, placed, perm, err, func(p client.Placement) string {
		return fmt.Sprintf("topic %s on %s (%s) now has perm %d (%s)", c.String("topic"), p.BrokerName, p.Addr, perm, protocol.PermString(int32(perm)))
	})
}

// queueStatsJSON is the JSON form of one queue of topic status.
type queueStatsJSON struct {
	Topic               string `json:"topic"`
	BrokerName          string `json:"brokerName"`
	QueueID             int32  `json:"queueId"`
	MinOffset           int64  `json:"minOffset"`
	MaxOffset           int64  `json:"maxOffset"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
}

func topicStatus(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	stats, err := a.TopicStats(ctx, c.String("topic"))
	if err != nil {
		return err
	}
	out := make([]queueStatsJSON, 0, len(stats))
	for _, s := range stats {
		out = append(out, queueStatsJSON{Topic: s.Queue.Topic, BrokerName: s.Queue.BrokerName, QueueID: s.Queue.QueueID,
			MinOffset: s.MinOffset, MaxOffset: s.MaxOffset, LastUpdateTimestamp: s.LastUpdateTimestamp})
	}
	return emit(c, out, func() error {
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "BROKER\tQUEUE\tMIN OFFSET\tMAX OFFSET\tLAST UPDATED")
		for _, s := range out {
			last := "-"
			if s.LastUpdateTimestamp > 0 {
				last = time.UnixMilli(s.LastUpdateTimestamp).Format(time.RFC3339Nano)
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", s.BrokerName, s.QueueID, s.MinOffset, s.MaxOffset, last)
		}
		return w.Flush()
	})
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
