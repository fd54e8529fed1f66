package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// adminTimeout bounds one admin command.
const adminTimeout = 30 * time.Second

func namesrvFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "namesrv", Aliases: []string{"n"}, Value: "127.0.0.1:9876", Usage: "name server address(es), comma-separated", EnvVars: []string{"NAMESRV_ADDR"}}
}

func topicFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "topic", Aliases: []string{"t"}, Required: true}
}

// withAdmin runs fn with an SDK admin client on --namesrv and a context
// bounded by adminTimeout.
func withAdmin(fn func(ctx context.Context, c *ucli.Context, a *client.Admin) error) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		a, err := newAdmin(c)
		if err != nil {
			return err
		}
		defer a.Close()
		ctx, cancel := context.WithTimeout(c.Context, adminTimeout)
		defer cancel()
		return fn(ctx, c, a)
	}
}

// newAdmin is the SDK admin client of a command's flags.
func newAdmin(c *ucli.Context) (*client.Admin, error) {
	cr, tc, err := clientSecurity(c)
	if err != nil {
		return nil, err
	}
	return client.NewAdmin(client.WithNameServers(c.String("namesrv")), client.WithRequestTimeout(5*time.Second),
		client.WithCredentials(cr), client.WithTLS(tc))
}

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

func formatAddrs(m map[int64]string) string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d=%s", id, m[id]))
	}
	return strings.Join(parts, " ")
}

func clusterCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster; manage a broker group's raft membership and leadership",
		Subcommands: append([]*ucli.Command{{
			Name:   "status",
			Usage:  "per node: raft role, term, commit and applied index, lag behind the leader",
			Flags:  []ucli.Flag{namesrvFlag()},
			Action: withAdmin(clusterStatus),
		}}, append(raftCommands(), drainCommands()...)...),
	}
}

// nodeStatus is one row of `cluster status`.
type nodeStatus struct {
	group, addr string
	table       map[string]string
	err         error
}

func clusterStatus(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return err
	}
	var rows []nodeStatus
	for _, name := range slices.Sorted(maps.Keys(ci.BrokerAddrTable)) {
		for _, addr := range ci.BrokerAddrTable[name].BrokerAddrs {
			table, err := a.BrokerRuntime(ctx, addr)
			rows = append(rows, nodeStatus{group: name, addr: addr, table: table, err: err})
		}
	}
	slices.SortFunc(rows, func(x, y nodeStatus) int {
		if x.group != y.group {
			return strings.Compare(x.group, y.group)
		}
		return strings.Compare(x.addr, y.addr)
	})
	printStatus(c.App.Writer, rows)
	return nil
}

func printStatus(out io.Writer, rows []nodeStatus) {
	leaderLast := map[string]int64{}
	for _, r := range rows {
		if r.err == nil && r.table["raftState"] == "Leader" {
			leaderLast[r.group], _ = strconv.ParseInt(r.table["raftLastLogIndex"], 10, 64)
		}
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tNODE\tADDRESS\tROLE\tTERM\tCOMMIT\tAPPLIED\tLAG")
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(w, "%s\t?\t%s\tunreachable\t\t\t\t%v\n", r.group, r.addr, r.err)
			continue
		}
		t := r.table
		lag := "-"
		if last, ok := leaderLast[r.group]; ok {
			applied, _ := strconv.ParseInt(t["raftAppliedIndex"], 10, 64)
			lag = strconv.FormatInt(max(0, last-applied), 10)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.group, t["raftNodeId"], r.addr, t["raftState"],
			t["raftTerm"], t["raftCommitIndex"], t["raftAppliedIndex"], lag)
	}
	w.Flush()
}

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
