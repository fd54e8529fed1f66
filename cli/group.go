package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/protocol"
)

func groupCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "group",
		Usage: "manage and inspect consumer groups: subscription configs, connections, progress, offsets",
		Subcommands: []*ucli.Command{
			{
				Name:   "create",
				Usage:  "create (or replace) a subscription group on every broker group of a cluster (mqadmin updateSubGroup)",
				Flags:  append([]ucli.Flag{namesrvFlag(), groupFlag(), clusterFlag(), outputFlag()}, subGroupFlags()...),
				Action: withAdmin(groupCreate),
			},
			{
				Name:   "update",
				Usage:  "change the given fields of an existing subscription group, keeping the others (mqadmin updateSubGroup)",
				Flags:  append([]ucli.Flag{namesrvFlag(), groupFlag(), clusterFlag(), outputFlag()}, subGroupFlags()...),
				Action: withAdmin(groupUpdate),
			},
			{
				Name:   "delete",
				Usage:  "delete a subscription group from every broker group of a cluster; its offsets stay (mqadmin deleteSubGroup)",
				Flags:  []ucli.Flag{namesrvFlag(), groupFlag(), clusterFlag(), outputFlag()},
				Action: withAdmin(groupDelete),
			},
			{
				Name:   "list",
				Usage:  "list the subscription groups and their configs, per broker group (mqadmin getConsumerConfig / dashboard consumer list)",
				Flags:  []ucli.Flag{namesrvFlag(), clusterFlag(), outputFlag()},
				Action: withAdmin(groupList),
			},
			{
				Name:  "progress",
				Usage: "per queue: broker max offset, the group's committed offset (- if none) and the lag, asked queue by queue (mqadmin consumerProgress without a running consumer)",
				Flags: []ucli.Flag{namesrvFlag(), groupFlag(),
					&ucli.StringSliceFlag{Name: "topic", Aliases: []string{"t"}, Usage: "only these topics (default all with an offset)"},
					outputFlag()},
				Action: withAdmin(groupProgress),
			},
			{
				Name:   "connections",
				Usage:  "the group's online consumers, how they consume and what they subscribe to (mqadmin consumerConnection)",
				Flags:  []ucli.Flag{namesrvFlag(), groupFlag(), outputFlag()},
				Action: withAdmin(groupConnections),
			},
			{
				Name:  "stats",
				Usage: "consume stats per queue: broker offset, consumer offset, last consumed time, lag, and the group's TPS (mqadmin consumerProgress -g)",
				Flags: []ucli.Flag{namesrvFlag(), groupFlag(),
					&ucli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "only this topic (default every topic the group has offsets for)"},
					outputFlag()},
				Action: withAdmin(groupStats),
			},
			{
				Name: "reset-offset",
				Usage: "move the group's offsets of a topic to a time, the earliest or the latest message, through the broker, " +
					"so running consumers restart there too (mqadmin resetOffsetByTime)",
				Flags: []ucli.Flag{namesrvFlag(), groupFlag(), topicFlag(),
					&ucli.StringFlag{Name: "timestamp", Aliases: []string{"s"}, Usage: "first message stored at or after this time: RFC3339 (2026-01-02T15:04:05Z), unix milliseconds, mqadmin's 2026-01-02#15:04:05:000 (local time) or now"},
					&ucli.StringFlag{Name: "to", Usage: "earliest (first stored message) or latest (skip everything stored)"},
					outputFlag(), progressFlag()},
				Action: withAdmin(groupResetOffset),
			},
			{
				Name:  "clone-offset",
				Usage: "give a group the offsets another group has on a topic (mqadmin cloneGroupOffset)",
				Flags: []ucli.Flag{namesrvFlag(),
					&ucli.StringFlag{Name: "from-group", Aliases: []string{"s"}, Required: true, Usage: "source consumer group"},
					&ucli.StringFlag{Name: "to-group", Aliases: []string{"d"}, Required: true, Usage: "destination consumer group"},
					topicFlag(), outputFlag(), progressFlag()},
				Action: withAdmin(groupCloneOffset),
			},
			{
				Name:   "skip-accumulated",
				Usage:  "move the group's offsets of a topic to the end, skipping the backlog; running consumers jump too (mqadmin skipAccumulatedMessage)",
				Flags:  []ucli.Flag{namesrvFlag(), groupFlag(), topicFlag(), outputFlag(), progressFlag()},
				Action: withAdmin(groupSkipAccumulated),
			},
		},
	}
}

func groupFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "group", Aliases: []string{"g"}, Required: true, Usage: "consumer group"}
}

// subGroupFlags are SubscriptionGroupConfig's fields, RocketMQ's defaults.
func subGroupFlags() []ucli.Flag {
	d := protocol.DefaultSubscriptionGroupConfig()
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "consume-enable", Value: d.ConsumeEnable, Usage: "consumeEnable: the group may consume (false stops its pulls)"},
		&ucli.BoolFlag{Name: "consume-from-min", Value: d.ConsumeFromMinEnable, Usage: "consumeFromMinEnable"},
		&ucli.BoolFlag{Name: "broadcast", Value: d.ConsumeBroadcastEnable, Usage: "consumeBroadcastEnable: broadcasting consumers allowed"},
		&ucli.IntFlag{Name: "retry-queues", Value: int(d.RetryQueueNums), Usage: "retryQueueNums: queues of the group's %RETRY% topic"},
		&ucli.IntFlag{Name: "retry-max-times", Value: int(d.RetryMaxTimes), Usage: "retryMaxTimes: redeliveries before the dead-letter queue"},
		&ucli.Int64Flag{Name: "broker-id", Value: d.BrokerID, Usage: "brokerId (stored for RocketMQ tools; raftmq sends a consumer that is not far behind to the leader, 0)"},
		&ucli.Int64Flag{Name: "slow-broker-id", Value: d.WhichBrokerWhenConsumeSlowly, Usage: "whichBrokerWhenConsumeSlowly: the follower the leader sends a consumer far behind to (follower reads)"},
		&ucli.BoolFlag{Name: "notify-ids-changed", Value: d.NotifyConsumerIdsChangedEnable, Usage: "notifyConsumerIdsChangedEnable: tell consumers when the group's members change"},
	}
}

// applySubGroupFlags sets cfg's fields from the flags (only those given
// on the command line when onlySet).
func applySubGroupFlags(c *ucli.Context, cfg *protocol.SubscriptionGroupConfig, onlySet bool) error {
	set := func(name string) bool { return !onlySet || c.IsSet(name) }
	if set("consume-enable") {
		cfg.ConsumeEnable = c.Bool("consume-enable")
	}
	if set("consume-from-min") {
		cfg.ConsumeFromMinEnable = c.Bool("consume-from-min")
	}
	if set("broadcast") {
		cfg.ConsumeBroadcastEnable = c.Bool("broadcast")
	}
	if set("retry-queues") {
		cfg.RetryQueueNums = int32(c.Int("retry-queues"))
	}
	if set("retry-max-times") {
		cfg.RetryMaxTimes = int32(c.Int("retry-max-times"))
	}
	if set("broker-id") {
		cfg.BrokerID = c.Int64("broker-id")
	}
	if set("slow-broker-id") {
		cfg.WhichBrokerWhenConsumeSlowly = c.Int64("slow-broker-id")
	}
	if set("notify-ids-changed") {
		cfg.NotifyConsumerIdsChangedEnable = c.Bool("notify-ids-changed")
	}
	if cfg.RetryQueueNums < 0 || cfg.RetryMaxTimes < 0 {
		return fmt.Errorf("--retry-queues %d and --retry-max-times %d must not be negative", cfg.RetryQueueNums, cfg.RetryMaxTimes)
	}
	return nil
}

func groupCreate(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	cfg := protocol.DefaultSubscriptionGroupConfig()
	cfg.GroupName = c.String("group")
	if err := applySubGroupFlags(c, &cfg, false); err != nil {
		return err
	}
	return putSubGroup(ctx, c, a, cfg, "created")
}

func groupUpdate(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	cur, err := a.SubscriptionGroup(ctx, c.String("cluster"), c.String("group"))
	if err != nil {
		return err
	}
	if len(cur) == 0 {
		return fmt.Errorf("no subscription group %q (create it with raftmq group create)", c.String("group"))
	}
	cfg := cur[0].Config
	if err := applySubGroupFlags(c, &cfg, true); err != nil {
		return err
	}
	return putSubGroup(ctx, c, a, cfg, "updated")
}

func putSubGroup(ctx context.Context, c *ucli.Context, a *client.Admin, cfg protocol.SubscriptionGroupConfig, verb string) error {
	placed, err := a.CreateSubscriptionGroup(ctx, c.String("cluster"), cfg)
	return reportPlacements(c, orEmpty(placed), placed, err, placedIn(verb+" subscription group "+cfg.GroupName))
}

func groupDelete(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	placed, err := a.DeleteSubscriptionGroup(ctx, c.String("cluster"), c.String("group"))
	return reportPlacements(c, orEmpty(placed), placed, err, placedIn("deleted subscription group "+c.String("group")))
}

// subGroupRow is one line of group list.
type subGroupRow struct {
	BrokerName string `json:"brokerName"`
	protocol.SubscriptionGroupConfig
}

func groupList(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	sgs, err := a.SubscriptionGroups(ctx, c.String("cluster"))
	if err != nil {
		return err
	}
	rows := make([]subGroupRow, 0, len(sgs))
	for _, g := range sgs {
		rows = append(rows, subGroupRow{BrokerName: g.BrokerName, SubscriptionGroupConfig: g.Config})
	}
	return emit(c, rows, func() error {
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "GROUP\tBROKER\tCONSUME\tBROADCAST\tRETRY QUEUES\tRETRY MAX\tBROKER ID\tSLOW BROKER ID")
		for _, r := range rows {
			fmt.Fprintf(w, "%s\t%s\t%t\t%t\t%d\t%d\t%d\t%d\n", r.GroupName, r.BrokerName, r.ConsumeEnable, r.ConsumeBroadcastEnable,
				r.RetryQueueNums, r.RetryMaxTimes, r.BrokerID, r.WhichBrokerWhenConsumeSlowly)
		}
		return w.Flush()
	})
}

// progressRow is one queue of group progress.
type progressRow struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"` // -1: none committed
	Lag            int64  `json:"lag"`
}

func groupProgress(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	prog, err := a.ConsumerGroupProgress(ctx, c.String("group"), c.StringSlice("topic")...)
	if err != nil {
		return err
	}
	rows := make([]progressRow, 0, len(prog))
	for _, p := range prog {
		rows = append(rows, progressRow{Topic: p.Queue.Topic, BrokerName: p.Queue.BrokerName, QueueID: p.Queue.QueueID,
			BrokerOffset: p.BrokerOffset, ConsumerOffset: p.ConsumerOffset, Lag: p.Lag})
	}
	return emit(c, rows, func() error {
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TOPIC\tBROKER\tQUEUE\tBROKER OFFSET\tCONSUMER OFFSET\tLAG")
		var total int64
		for _, p := range rows {
			co := strconv.FormatInt(p.ConsumerOffset, 10)
			if p.ConsumerOffset < 0 {
				co = "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%d\n", p.Topic, p.BrokerName, p.QueueID, p.BrokerOffset, co, p.Lag)
			total += p.Lag
		}
		fmt.Fprintf(w, "total lag\t\t\t\t\t%d\n", total)
		return w.Flush()
	})
}

// connectionRow is one client of a consumer or producer group.
type connectionRow struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
	BrokerName string `json:"brokerName"`
}

func connectionRows(conns []client.ClientConnection) []connectionRow {
	rows := make([]connectionRow, 0, len(conns))
	for _, cc := range conns {
		rows = append(rows, connectionRow{ClientID: cc.ClientID, ClientAddr: cc.ClientAddr, Language: cc.Language,
			Version: cc.Version, BrokerName: cc.BrokerName})
	}
	return rows
}

func printConnections(c *ucli.Context, rows []connectionRow) error {
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "#\tCLIENT ID\tCLIENT ADDR\tLANGUAGE\tVERSION")
	for i, r := range rows {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\n", i+1, r.ClientID, r.ClientAddr, r.Language, r.Version)
	}
	return w.Flush()
}

// subscriptionRow is one subscription of a consumer group.
type subscriptionRow struct {
	Topic          string `json:"topic"`
	Expression     string `json:"expression"`
	ExpressionType string `json:"expressionType"`
	SubVersion     int64  `json:"subVersion"`
}

// consumerConnectionsOut is group connections' JSON document.
type consumerConnectionsOut struct {
	Group            string            `json:"group"`
	ConsumeType      string            `json:"consumeType"`
	MessageModel     string            `json:"messageModel"`
	ConsumeFromWhere string            `json:"consumeFromWhere"`
	Connections      []connectionRow   `json:"connections"`
	Subscriptions    []subscriptionRow `json:"subscriptions"`
}

func groupConnections(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	cc, err := a.ConsumerConnections(ctx, c.String("group"))
	if err != nil {
		return err
	}
	out := consumerConnectionsOut{Group: c.String("group"), ConsumeType: cc.ConsumeType, MessageModel: cc.MessageModel,
		ConsumeFromWhere: cc.ConsumeFromWhere, Connections: connectionRows(cc.Connections), Subscriptions: []subscriptionRow{}}
	for _, s := range cc.Subscriptions {
		out.Subscriptions = append(out.Subscriptions, subscriptionRow{Topic: s.Topic, Expression: s.SubString,
			ExpressionType: s.ExpressionType, SubVersion: s.SubVersion})
	}
	return emit(c, out, func() error {
		if err := printConnections(c, out.Connections); err != nil {
			return err
		}
		fmt.Fprintln(c.App.Writer)
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TOPIC\tEXPRESSION\tTYPE")
		for _, s := range out.Subscriptions {
			fmt.Fprintf(w, "%s\t%s\t%s\n", s.Topic, s.Expression, s.ExpressionType)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(c.App.Writer, "\nconsume type: %s\nmessage model: %s\nconsume from where: %s\n",
			out.ConsumeType, out.MessageModel, out.ConsumeFromWhere)
		return err
	})
}

// queueStatsRow is one queue of group stats.
type queueStatsRow struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	// LastTimestamp is the store time of the last consumed message, unix
	// ms (0: none).
	LastTimestamp int64 `json:"lastTimestamp"`
	Lag           int64 `json:"lag"`
}

// consumeStatsOut is group stats' JSON document.
type consumeStatsOut struct {
	Group      string          `json:"group"`
	ConsumeTps float64         `json:"consumeTps"`
	Lag        int64           `json:"lag"`
	Queues     []queueStatsRow `json:"queues"`
}

func groupStats(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	cs, err := a.ConsumeStats(ctx, c.String("group"), c.String("topic"))
	if err != nil {
		return err
	}
	out := consumeStatsOut{Group: c.String("group"), ConsumeTps: cs.ConsumeTps, Lag: cs.Lag, Queues: make([]queueStatsRow, 0, len(cs.Queues))}
	for _, q := range cs.Queues {
		r := queueStatsRow{Topic: q.Queue.Topic, BrokerName: q.Queue.BrokerName, QueueID: q.Queue.QueueID,
			BrokerOffset: q.BrokerOffset, ConsumerOffset: q.ConsumerOffset, Lag: q.Lag}
		if !q.LastTimestamp.IsZero() {
			r.LastTimestamp = q.LastTimestamp.UnixMilli()
		}
		out.Queues = append(out.Queues, r)
	}
	return emit(c, out, func() error {
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TOPIC\tBROKER\tQUEUE\tBROKER OFFSET\tCONSUMER OFFSET\tLAG\tLAST CONSUMED")
		for _, r := range out.Queues {
			last := "-"
			if r.LastTimestamp > 0 {
				last = time.UnixMilli(r.LastTimestamp).Format(time.RFC3339)
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", r.Topic, r.BrokerName, r.QueueID, r.BrokerOffset, r.ConsumerOffset, r.Lag, last)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(c.App.Writer, "\nconsume TPS: %.2f\ntotal lag: %d\n", out.ConsumeTps, out.Lag)
		return err
	})
}

// queueOffsetRow is one queue's new offset after reset, clone or skip.
type queueOffsetRow struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Offset     int64  `json:"offset"`
}

func emitOffsets(c *ucli.Context, group string, offs []client.QueueOffset) error {
	rows := make([]queueOffsetRow, 0, len(offs))
	for _, o := range offs {
		rows = append(rows, queueOffsetRow{Topic: o.Queue.Topic, BrokerName: o.Queue.BrokerName, QueueID: o.Queue.QueueID, Offset: o.Offset})
	}
	return emit(c, rows, func() error {
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TOPIC\tBROKER\tQUEUE\tNEW OFFSET")
		for _, r := range rows {
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\n", r.Topic, r.BrokerName, r.QueueID, r.Offset)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(c.App.Writer, "group %s: %d queue(s) set\n", group, len(rows))
		return err
	})
}

// offsetsDone prints the offsets set, those set before a failure too (a
// broker group that failed stops the work; earlier ones keep theirs),
// and returns err.
func offsetsDone(c *ucli.Context, group string, offs []client.QueueOffset, err error) error {
	if err != nil && len(offs) == 0 {
		return err
	}
	if perr := emitOffsets(c, group, offs); err == nil {
		return perr
	}
	return fmt.Errorf("stopped after %d queue(s): %w", len(offs), err)
}

// lazyProgress is a stepProgress made at the first report, when the total
// is known.
type lazyProgress struct {
	c     *ucli.Context
	label string
	p     *stepProgress
	done  int
}

func (l *lazyProgress) report(done, total int, what string) {
	if l.p == nil {
		l.p = newStepProgress(l.c, l.label, total)
	}
	l.p.Step(done-l.done, what)
	l.done = done
}

func (l *lazyProgress) finish() {
	if l.p != nil {
		l.p.Done()
	}
}

// parseMQAdminTime reads mqadmin resetOffsetByTime's -s format,
// yyyy-MM-dd#HH:mm:ss:SSS, in local time (Go layouts have no
// milliseconds after a colon).
func parseMQAdminTime(s string) (time.Time, bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return time.Time{}, false
	}
	head, ms := s[:i], s[i+1:]
	n, err := strconv.Atoi(ms)
	if len(ms) != 3 || err != nil {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("2006-01-02#15:04:05", head, time.Local)
	if err != nil {
		return time.Time{}, false
	}
	return t.Add(time.Duration(n) * time.Millisecond), true
}

// parseResetTime reads --timestamp: RFC3339, unix milliseconds, mqadmin's
// yyyy-MM-dd#HH:mm:ss:SSS (local time) or "now".
func parseResetTime(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return time.Time{}, fmt.Errorf("--timestamp %d: unix milliseconds must not be negative", ms)
		}
		return time.UnixMilli(ms), nil
	}
	if strings.EqualFold(s, "now") {
		return time.Now(), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, ok := parseMQAdminTime(s); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--timestamp %q is neither RFC3339 (2006-01-02T15:04:05Z07:00), unix milliseconds, "+
		"mqadmin's yyyy-MM-dd#HH:mm:ss:SSS nor now", s)
}

func groupResetOffset(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	r := client.OffsetReset{Group: c.String("group"), Topic: c.String("topic")}
	ts, to := c.String("timestamp"), strings.ToLower(c.String("to"))
	switch {
	case ts != "" && to != "":
		return errors.New("give either --timestamp or --to, not both")
	case ts != "":
		t, err := parseResetTime(ts)
		if err != nil {
			return err
		}
		r.Timestamp = t
	case to == "earliest":
	case to == "latest":
		r.Latest = true
	case to != "":
		return fmt.Errorf("unknown --to %q (want earliest or latest)", c.String("to"))
	default:
		return errors.New("give --timestamp (RFC3339, unix ms, yyyy-MM-dd#HH:mm:ss:SSS or now) or --to earliest|latest")
	}
	lp := &lazyProgress{c: c, label: "reset-offset"}
	r.Progress = func(done, total int, broker string) { lp.report(done, total, broker) }
	offs, err := a.ResetOffset(ctx, r)
	lp.finish()
	return offsetsDone(c, r.Group, offs, err)
}

func groupCloneOffset(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	lp := &lazyProgress{c: c, label: "clone-offset"}
	offs, err := a.CloneGroupOffset(ctx, c.String("from-group"), c.String("to-group"), c.String("topic"),
		func(done, total int, q client.MessageQueue) {
			lp.report(done, total, fmt.Sprintf("%s/%s/%d", q.Topic, q.BrokerName, q.QueueID))
		})
	lp.finish()
	return offsetsDone(c, c.String("to-group"), offs, err)
}

func groupSkipAccumulated(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	lp := &lazyProgress{c: c, label: "skip-accumulated"}
	offs, err := a.SkipAccumulated(ctx, c.String("group"), c.String("topic"), func(done, total int, broker string) {
		lp.report(done, total, broker)
	})
	lp.finish()
	return offsetsDone(c, c.String("group"), offs, err)
}
