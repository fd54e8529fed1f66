package cli

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
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

func messageCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "message",
		Usage: "look messages up and print them (mqadmin queryMsgByKey, queryMsgByUniqueKey, queryMsgById, queryMsgByOffset, printMsg, printMsgByQueue, queryMsgTraceById)",
		Subcommands: []*ucli.Command{
			{
				Name: "query",
				Usage: "find a topic's messages by key (mqadmin queryMsgByKey) or by unique key, the send result's msgId " +
					"(--unique-key; mqadmin queryMsgByUniqueKey), stored between --begin (default --since ago) and --end (default now)",
				Flags: []ucli.Flag{namesrvFlag(), topicFlag(),
					&ucli.StringFlag{Name: "key", Aliases: []string{"k"}, Usage: "a key the message was sent with (KEYS)"},
					&ucli.StringFlag{Name: "unique-key", Aliases: []string{"u"}, Usage: "the message's unique key (UNIQ_KEY, the msgId send prints)"},
					&ucli.DurationFlag{Name: "since", Value: 72 * time.Hour, Usage: "how far back from --end (default now) to look when --begin is not given"},
					beginFlag(), endFlag(),
					&ucli.IntFlag{Name: "max", Value: 32, Usage: "at most this many per broker group (key queries)"},
					bodyFormatFlag(), outputFlag()},
				Action: withAdmin(messageQuery),
			},
			{
				Name: "view",
				Usage: "show one message: by its offset message id (--id, the send result's offsetMsgId; mqadmin queryMsgById) " +
					"or by queue offset (--topic --broker --queue --offset; mqadmin queryMsgByOffset)",
				Flags: []ucli.Flag{namesrvFlag(), &ucli.StringFlag{Name: "id", Usage: "offset message id"},
					&ucli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "topic (with --broker, --queue, --offset)"},
					&ucli.StringFlag{Name: "broker", Aliases: []string{"b"}, Usage: "broker group of the queue"},
					&ucli.IntFlag{Name: "queue", Aliases: []string{"q"}, Usage: "queue id"},
					&ucli.Int64Flag{Name: "offset", Usage: "queue offset"},
					bodyFormatFlag(), outputFlag()},
				Action: withAdmin(messageView),
			},
			{
				Name: "print",
				Usage: "print a topic's stored messages, one per line, queue by queue in offset order (mqadmin printMsg, printMsgByQueue): " +
					"every queue or --broker/--queue, offsets [--begin-offset, --end-offset) or store times [--begin, --end]",
				Flags: []ucli.Flag{namesrvFlag(), topicFlag(),
					&ucli.StringFlag{Name: "broker", Aliases: []string{"b"}, Usage: "only this broker group's queues (default all)"},
					&ucli.IntFlag{Name: "queue", Aliases: []string{"q"}, Value: -1, Usage: "only this queue id (default all)"},
					&ucli.Int64Flag{Name: "begin-offset", Usage: "first queue offset to print (default the queue's min offset)"},
					&ucli.Int64Flag{Name: "end-offset", Value: -1, Usage: "stop before this queue offset (default the queue's max offset)"},
					beginFlag(), endFlag(),
					&ucli.IntFlag{Name: "max", Usage: "stop after this many messages (default no limit)"},
					bodyFormatFlag(), outputFlag(), progressFlag()},
				Action: withAdmin(messagePrint),
			},
			{
				Name:  "trace",
				Usage: "print a message's send and consume timeline from the clients' trace records (mqadmin queryMsgTraceById)",
				Flags: []ucli.Flag{namesrvFlag(),
					&ucli.StringFlag{Name: "id", Required: true, Usage: "the message id (the send result's msgId, its unique key)"},
					&ucli.StringFlag{Name: "trace-topic", Value: protocol.TraceTopic, Usage: "the topic the trace hooks write to"},
					&ucli.DurationFlag{Name: "since", Value: 72 * time.Hour, Usage: "how far back to look"},
					outputFlag()},
				Action: withAdmin(messageTrace),
			},
		},
	}
}

func beginFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "begin", Usage: "earliest store time: RFC3339 (2026-01-02T15:04:05Z) or Unix milliseconds"}
}

func endFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "end", Usage: "latest store time: RFC3339 or Unix milliseconds (default now)"}
}

func bodyFormatFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "body-format", Value: "text", Usage: "how bodies are printed: text, base64 or hex"}
}

// parseTime reads a time flag's value: RFC3339 (with or without
// fractional seconds) or Unix milliseconds.
func parseTime(flag, v string) (time.Time, error) {
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		if ms < 0 {
			return time.Time{}, fmt.Errorf("--%s %q: negative Unix milliseconds", flag, v)
		}
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--%s %q: want RFC3339 (2026-01-02T15:04:05Z) or Unix milliseconds", flag, v)
	}
	return t, nil
}

// timeRange is the --begin/--end range of a command; an unset --end is
// zero (now), an unset --begin is what def makes of the end (now when
// --end is unset).
func timeRange(c *ucli.Context, def func(end time.Time) time.Time) (time.Time, time.Time, error) {
	var begin, end time.Time
	var err error
	if c.IsSet("end") {
		if end, err = parseTime("end", c.String("end")); err != nil {
			return begin, end, err
		}
	}
	begin = def(cmpTime(end))
	if c.IsSet("begin") {
		if begin, err = parseTime("begin", c.String("begin")); err != nil {
			return begin, end, err
		}
	}
	if !end.IsZero() && begin.After(end) {
		return begin, end, fmt.Errorf("--begin %s is after --end %s", begin.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	}
	if end.IsZero() && begin.After(time.Now()) {
		return begin, end, fmt.Errorf("--begin %s is in the future", begin.Format(time.RFC3339Nano))
	}
	return begin, end, nil
}

// bodyFormatter returns the --body-format encoder, or an error naming an
// unknown format.
func bodyFormatter(c *ucli.Context) (func([]byte) string, error) {
	switch f := c.String("body-format"); f {
	case "", "text":
		return func(b []byte) string { return string(b) }, nil
	case "base64":
		return base64.StdEncoding.EncodeToString, nil
	case "hex":
		return hex.EncodeToString, nil
	default:
		return nil, fmt.Errorf("unknown --body-format %q (want text, base64 or hex)", f)
	}
}

// messageJSON is the JSON form of a looked-up or printed message.
type messageJSON struct {
	Topic          string            `json:"topic"`
	MsgID          string            `json:"msgId"`
	OffsetMsgID    string            `json:"offsetMsgId"`
	BrokerName     string            `json:"brokerName"`
	QueueID        int32             `json:"queueId"`
	QueueOffset    int64             `json:"queueOffset"`
	StoreTimestamp int64             `json:"storeTimestamp"`
	BornTimestamp  int64             `json:"bornTimestamp"`
	StoreHost      string            `json:"storeHost"`
	BornHost       string            `json:"bornHost"`
	ReconsumeTimes int32             `json:"reconsumeTimes"`
	Tags           string            `json:"tags"`
	Keys           []string          `json:"keys"`
	Properties     map[string]string `json:"properties"`
	Body           string            `json:"body"`
}

func toMessageJSON(m *message.MessageExt, brokerName string, body func([]byte) string) messageJSON {
	keys := m.Keys()
	if keys == nil {
		keys = []string{}
	}
	props := maps.Clone(m.Properties)
	if props == nil {
		props = map[string]string{}
	}
	return messageJSON{Topic: m.Topic, MsgID: m.UniqKey(), OffsetMsgID: m.MsgID(), BrokerName: brokerName, QueueID: m.QueueID,
		QueueOffset: m.QueueOffset, StoreTimestamp: m.StoreTimestamp, BornTimestamp: m.BornTimestamp,
		StoreHost: m.StoreHost.String(), BornHost: m.BornHost.String(), ReconsumeTimes: m.ReconsumeTimes,
		Tags: m.Tags(), Keys: keys, Properties: props, Body: body(m.Body)}
}

// brokerNames maps node addresses to their broker group from the cluster
// info, to name the group of a looked-up message's store host ("" when
// the name server no longer lists it).
func brokerNames(ctx context.Context, a *client.Admin) func(netip.AddrPort) string {
	names := map[string]string{}
	if ci, err := a.ClusterInfo(ctx); err == nil {
		for name, bd := range ci.BrokerAddrTable {
			for _, addr := range bd.BrokerAddrs {
				names[addr] = name
			}
		}
	}
	return func(host netip.AddrPort) string { return names[host.String()] }
}

func messageQuery(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	key, uniq := c.String("key"), c.String("unique-key")
	if (key == "") == (uniq == "") {
		return errors.New("give one of --key and --unique-key")
	}
	body, err := bodyFormatter(c)
	if err != nil {
		return err
	}
	begin, end, err := timeRange(c, func(end time.Time) time.Time { return end.Add(-c.Duration("since")) })
	if err != nil {
		return err
	}
	var msgs []*message.MessageExt
	what := fmt.Sprintf("key %q", key)
	if uniq != "" {
		what = fmt.Sprintf("unique key %q", uniq)
		msgs, err = a.QueryMessageByUniqueKey(ctx, c.String("topic"), uniq, begin, end)
	} else {
		msgs, err = a.QueryMessageByKey(ctx, c.String("topic"), key, begin, end, c.Int("max"))
	}
	if err != nil {
		return err
	}
	broker := brokerNames(ctx, a)
	out := make([]messageJSON, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, toMessageJSON(m, broker(m.StoreHost), body))
	}
	if err := emit(c, out, func() error {
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "MSGID\tOFFSET MSGID\tBROKER\tQUEUE\tOFFSET\tSTORED\tTAGS\tKEYS")
		for _, m := range out {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", m.MsgID, m.OffsetMsgID, dash(m.BrokerName), m.QueueID, m.QueueOffset,
				formatMillis(m.StoreTimestamp), m.Tags, strings.Join(m.Keys, " "))
		}
		return w.Flush()
	}); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return fmt.Errorf("no message of %s with %s stored between %s and %s", c.String("topic"), what,
			begin.Format(time.RFC3339), cmpTime(end).Format(time.RFC3339))
	}
	return nil
}

func cmpTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

func formatMillis(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).Format(time.RFC3339Nano)
}

func messageView(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	byOffset := c.IsSet("topic") || c.IsSet("broker") || c.IsSet("queue") || c.IsSet("offset")
	switch {
	case c.IsSet("id") == byOffset:
		return errors.New("give --id, or --topic, --broker, --queue and --offset")
	case byOffset && !(c.IsSet("topic") && c.IsSet("broker") && c.IsSet("queue") && c.IsSet("offset")):
		return errors.New("viewing by queue offset needs all of --topic, --broker, --queue and --offset")
	}
	body, err := bodyFormatter(c)
	if err != nil {
		return err
	}
	var m *message.MessageExt
	var brokerName string
	if byOffset {
		q := client.MessageQueue{Topic: c.String("topic"), BrokerName: c.String("broker"), QueueID: int32(c.Int("queue"))}
		if m, err = a.ViewMessageByQueueOffset(ctx, q, c.Int64("offset")); err != nil {
			return err
		}
		brokerName = q.BrokerName
	} else {
		if m, err = a.ViewMessageByID(ctx, c.String("id")); err != nil {
			return err
		}
		brokerName = brokerNames(ctx, a)(m.StoreHost)
	}
	js := toMessageJSON(m, brokerName, body)
	return emit(c, js, func() error { return printMessage(c.App.Writer, js) })
}

func printMessage(out io.Writer, m messageJSON) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "topic:\t%s\n", m.Topic)
	fmt.Fprintf(w, "msgId:\t%s\n", m.MsgID)
	fmt.Fprintf(w, "offsetMsgId:\t%s\n", m.OffsetMsgID)
	fmt.Fprintf(w, "broker:\t%s\n", dash(m.BrokerName))
	fmt.Fprintf(w, "queue:\t%d\n", m.QueueID)
	fmt.Fprintf(w, "queue offset:\t%d\n", m.QueueOffset)
	fmt.Fprintf(w, "tags:\t%s\n", m.Tags)
	fmt.Fprintf(w, "keys:\t%s\n", strings.Join(m.Keys, " "))
	fmt.Fprintf(w, "born:\t%s at %s\n", m.BornHost, formatMillis(m.BornTimestamp))
	fmt.Fprintf(w, "stored:\t%s at %s\n", m.StoreHost, formatMillis(m.StoreTimestamp))
	fmt.Fprintf(w, "reconsume times:\t%d\n", m.ReconsumeTimes)
	for _, k := range slices.Sorted(maps.Keys(m.Properties)) {
		fmt.Fprintf(w, "property %s:\t%s\n", k, m.Properties[k])
	}
	fmt.Fprintf(w, "body:\t%s\n", m.Body)
	return w.Flush()
}

// errEnough stops a print at --max.
var errEnough = errors.New("enough messages printed")

func messagePrint(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	byOffset := c.IsSet("begin-offset") || c.IsSet("end-offset")
	byTime := c.IsSet("begin") || c.IsSet("end")
	if byOffset && byTime {
		return errors.New("give offsets (--begin-offset, --end-offset) or store times (--begin, --end), not both")
	}
	from, to := c.Int64("begin-offset"), c.Int64("end-offset")
	switch {
	case from < 0:
		return fmt.Errorf("--begin-offset %d is negative", from)
	case to >= 0 && from > to:
		return fmt.Errorf("--begin-offset %d is after --end-offset %d", from, to)
	case c.Int("max") < 0:
		return fmt.Errorf("--max %d is negative", c.Int("max"))
	}
	begin, end, err := timeRange(c, func(time.Time) time.Time { return time.UnixMilli(0) })
	if err != nil {
		return err
	}
	body, err := bodyFormatter(c)
	if err != nil {
		return err
	}
	js, err := jsonOutput(c)
	if err != nil {
		return err
	}
	queues, err := printQueues(ctx, c, a)
	if err != nil {
		return err
	}
	out := &messageStream{w: c.App.Writer, json: js}
	bar := newStepProgress(c, "printing "+c.String("topic"), len(queues))
	defer bar.Done()
	for _, q := range queues {
		each := func(m *message.MessageExt) error {
			if c.Int("max") > 0 && out.n >= c.Int("max") {
				return errEnough
			}
			return out.write(toMessageJSON(m, q.BrokerName, body))
		}
		if byTime {
			err = a.ScanQueueByTime(ctx, q, begin, end, each)
		} else {
			err = a.ScanQueue(ctx, q, from, to, each)
		}
		bar.Step(1, q.String())
		if err != nil {
			break
		}
	}
	if errors.Is(err, errEnough) {
		err = nil
	}
	if cerr := out.close(); err == nil {
		err = cerr
	}
	return err
}

// printQueues is the queues message print reads: every read queue of the
// topic, or those of --broker and --queue, sorted.
func printQueues(ctx context.Context, c *ucli.Context, a *client.Admin) ([]client.MessageQueue, error) {
	bounds, err := a.TopicQueueBounds(ctx, c.String("topic"))
	if err != nil {
		return nil, err
	}
	var out []client.MessageQueue
	brokers := map[string]bool{}
	for _, b := range bounds {
		brokers[b.Queue.BrokerName] = true
		if (c.String("broker") == "" || b.Queue.BrokerName == c.String("broker")) && (c.Int("queue") < 0 || int(b.Queue.QueueID) == c.Int("queue")) {
			out = append(out, b.Queue)
		}
	}
	switch {
	case c.String("broker") != "" && !brokers[c.String("broker")]:
		return nil, fmt.Errorf("topic %s has no queues on broker group %s (it is on %s)", c.String("topic"), c.String("broker"),
			strings.Join(slices.Sorted(maps.Keys(brokers)), ", "))
	case len(out) == 0 && c.Int("queue") >= 0:
		return nil, fmt.Errorf("topic %s has no read queue %d", c.String("topic"), c.Int("queue"))
	case len(out) == 0:
		return nil, fmt.Errorf("topic %s has no readable queue (is its perm write-only?)", c.String("topic"))
	}
	return out, nil
}

// messageStream prints messages as they come: one line each, or the
// elements of one JSON array (the shape emit would give the whole list),
// so a long range never sits in memory.
type messageStream struct {
	w    io.Writer
	json bool
	n    int
}

func (s *messageStream) write(m messageJSON) error {
	defer func() { s.n++ }()
	if !s.json {
		_, err := fmt.Fprintf(s.w, "%s#%d offset=%d stored=%s msgId=%s tags=%s keys=%s body=%q\n", m.BrokerName, m.QueueID,
			m.QueueOffset, formatMillis(m.StoreTimestamp), m.MsgID, m.Tags, strings.Join(m.Keys, ","), m.Body)
		return err
	}
	b, err := json.MarshalIndent(m, "  ", "  ")
	if err != nil {
		return err
	}
	sep := ",\n  "
	if s.n == 0 {
		sep = "[\n  "
	}
	_, err = fmt.Fprintf(s.w, "%s%s", sep, b)
	return err
}

func (s *messageStream) close() error {
	if !s.json {
		return nil
	}
	end := "\n]\n"
	if s.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(s.w, end)
	return err
}
