package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

func sendCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "send",
		Usage:     "send messages with the raftmq SDK: --body, or one message per line of stdin",
		ArgsUsage: " ",
		Flags: []ucli.Flag{
			namesrvFlag(), topicFlag(),
			&ucli.StringFlag{Name: "body", Aliases: []string{"b"}, Usage: "message body (default: read stdin, one message per line)"},
			&ucli.StringFlag{Name: "tag", Usage: "message tag"},
			&ucli.StringFlag{Name: "keys", Aliases: []string{"k"}, Usage: "message keys, comma- or space-separated"},
			&ucli.StringSliceFlag{Name: "property", Aliases: []string{"p"}, Usage: "user property key=value (repeatable)"},
			&ucli.IntFlag{Name: "count", Aliases: []string{"c"}, Value: 1, Usage: "send each body this many times"},
			&ucli.IntFlag{Name: "delay-level", Usage: "delay level 1..18 (1s 5s 10s 30s 1m ... 2h)"},
			&ucli.StringFlag{Name: "group", Aliases: []string{"g"}, Value: "raftmq-cli-producer", Usage: "producer group"},
			&ucli.DurationFlag{Name: "timeout", Value: client.DefaultSendTimeout, Usage: "per-send timeout, retries and failover included"},
			&ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output: table (a SEND_OK line per message) or json (one object per line)"},
		},
		Action: sendAction,
	}
}

func sendAction(c *ucli.Context) error {
	tmpl, err := messageTemplate(c)
	if err != nil {
		return err
	}
	js, err := jsonOutput(c)
	if err != nil {
		return err
	}
	cr, tc, err := clientSecurity(c)
	if err != nil {
		return err
	}
	p, err := client.NewProducer(c.String("group"), client.WithNameServers(c.String("namesrv")),
		client.WithSendTimeout(c.Duration("timeout")), client.WithCredentials(cr), client.WithTLS(tc))
	if err != nil {
		return err
	}
	ctx := c.Context
	if err := p.Start(ctx); err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(closeCtx)
	}()
	send := func(body []byte) error {
		for range max(1, c.Int("count")) {
			m := tmpl.copyWith(body)
			res, err := p.Send(ctx, m)
			if err != nil {
				return err
			}
			if err := printSent(c.App.Writer, js, res); err != nil {
				return err
			}
		}
		return nil
	}
	if c.IsSet("body") {
		return send([]byte(c.String("body")))
	}
	return eachLine(stdin(c), send)
}

// stdin is the app's reader (tests set c.App.Reader), else os.Stdin.
func stdin(c *ucli.Context) io.Reader {
	if c.App.Reader != nil {
		return c.App.Reader
	}
	return os.Stdin
}

// eachLine calls f with every non-empty line of r.
func eachLine(r io.Reader, f func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), client.DefaultMaxMessageSize)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := f([]byte(sc.Text())); err != nil {
			return err
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("a line of the input is longer than %d bytes, the largest body raftmq send takes (a broker's default --max-message-size): split it", client.DefaultMaxMessageSize)
	}
	return sc.Err()
}

// template is what every message of one send command shares.
type template struct {
	topic string
	props map[string]string
}

func (t template) copyWith(body []byte) *message.Message {
	props := make(map[string]string, len(t.props))
	for k, v := range t.props {
		props[k] = v
	}
	return &message.Message{Topic: t.topic, Properties: props, Body: body}
}

func messageTemplate(c *ucli.Context) (template, error) {
	if err := protocol.ValidateTopic(c.String("topic")); err != nil {
		return template{}, fmt.Errorf("--topic: %w", err)
	}
	m := &message.Message{Topic: c.String("topic")}
	if tag := c.String("tag"); tag != "" {
		m.SetTags(tag)
	}
	if keys := strings.FieldsFunc(c.String("keys"), func(r rune) bool { return r == ',' || r == ' ' }); len(keys) > 0 {
		m.SetKeys(keys)
	}
	if lvl := c.Int("delay-level"); lvl != 0 {
		if lvl < 1 || lvl > 18 {
			return template{}, fmt.Errorf("--delay-level %d is not in 1..18", lvl)
		}
		m.SetDelayLevel(lvl)
	}
	for _, kv := range c.StringSlice("property") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return template{}, fmt.Errorf("--property %q is not key=value", kv)
		}
		m.SetProperty(k, v)
	}
	return template{topic: m.Topic, props: m.Properties}, nil
}

// sentJSON is a send result in --output json (one object per line).
type sentJSON struct {
	Status      string `json:"status"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	BrokerName  string `json:"brokerName"`
	QueueID     int    `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
}

func printSent(w io.Writer, js bool, res client.SendResult) error {
	if !js {
		_, err := fmt.Fprintf(w, "%s msgId=%s offsetMsgId=%s queue=%s#%d offset=%d\n", res.Status, res.MsgID,
			res.OffsetMsgID, res.Queue.BrokerName, res.Queue.QueueID, res.QueueOffset)
		return err
	}
	b, err := json.Marshal(sentJSON{Status: res.Status.String(), MsgID: res.MsgID, OffsetMsgID: res.OffsetMsgID,
		BrokerName: res.Queue.BrokerName, QueueID: int(res.Queue.QueueID), QueueOffset: res.QueueOffset})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
