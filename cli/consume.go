package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

func consumeCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "consume",
		Usage:     "consume a topic with the raftmq SDK and print the messages; offsets are committed as printed",
		ArgsUsage: " ",
		Flags: []ucli.Flag{
			namesrvFlag(), topicFlag(),
			&ucli.StringFlag{Name: "group", Aliases: []string{"g"}, Value: "raftmq-cli-consumer", Usage: "consumer group"},
			&ucli.StringFlag{Name: "expr", Aliases: []string{"e"}, Value: "*", Usage: `tag expression: "*" or "A || B"`},
			&ucli.StringFlag{Name: "from", Value: "last", Usage: "where a group without a committed offset starts: first or last"},
			&ucli.StringFlag{Name: "format", Aliases: []string{"output", "o"}, Value: "text", Usage: "output: text (or table) or json (one object per line)"},
			&ucli.IntFlag{Name: "count", Aliases: []string{"c"}, Usage: "exit after this many messages (0: run until interrupted)"},
		},
		Action: consumeAction,
	}
}

func consumeAction(c *ucli.Context) error {
	from, err := parseFrom(c.String("from"))
	if err != nil {
		return err
	}
	format := c.String("format")
	if format == "table" {
		format = "text"
	}
	if format != "text" && format != "json" {
		return fmt.Errorf("--format %q is not text or json", format)
	}
	want := c.Int("count")
	cr, tc, err := clientSecurity(c)
	if err != nil {
		return err
	}
	opts := []client.PullConsumerOpt{client.WithNameServers(c.String("namesrv")), client.WithConsumeFrom(from), client.WithCredentials(cr), client.WithTLS(tc)}
	if want > 0 {
		opts = append(opts, client.WithPullBatchSize(min(want, client.DefaultPullBatchSize)))
	}
	pc, err := client.NewPullConsumer(c.String("group"), opts...)
	if err != nil {
		return err
	}
	if err := pc.Subscribe(c.String("topic"), c.String("expr")); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := pc.Start(ctx); err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = pc.Close(closeCtx)
	}()
	err = consumeLoop(ctx, pc, want, func(m *message.MessageExt) error { return printConsumed(c.App.Writer, format, m) })
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // interrupted
	}
	return err
}

func parseFrom(s string) (client.ConsumeFrom, error) {
	switch s {
	case "first":
		return client.ConsumeFromFirst(), nil
	case "last":
		return client.ConsumeFromLast(), nil
	}
	return client.ConsumeFrom{}, fmt.Errorf("--from %q is not first or last", s)
}

// consumeLoop prints polled messages until want (0: no limit) are printed,
// committing after every batch. A batch cut short at want moves its queue
// back to the first unprinted message, so the commit covers exactly what
// was printed.
func consumeLoop(ctx context.Context, pc *client.PullConsumer, want int, print func(*message.MessageExt) error) error {
	printed := 0
	for want == 0 || printed < want {
		q, msgs, err := pc.PollQueue(ctx)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if want > 0 && printed == want {
				if err := pc.Seek(q, m.QueueOffset); err != nil {
					return err
				}
				break
			}
			if err := print(m); err != nil {
				return err
			}
			printed++
		}
		if err := pc.Commit(ctx); err != nil {
			return err
		}
	}
	return nil
}

// printedMessage is the JSON form of a printed message.
type printedMessage struct {
	MsgID          string   `json:"msgId"`
	OffsetMsgID    string   `json:"offsetMsgId"`
	Topic          string   `json:"topic"`
	Queue          int32    `json:"queue"`
	Offset         int64    `json:"offset"`
	Tags           string   `json:"tags,omitempty"`
	Keys           []string `json:"keys,omitempty"`
	ReconsumeTimes int32    `json:"reconsumeTimes"`
	StoreTimestamp int64    `json:"storeTimestamp"`
	Body           string   `json:"body"`
}

func printConsumed(w io.Writer, format string, m *message.MessageExt) error {
	id := m.UniqKey()
	if id == "" {
		id = m.MsgID()
	}
	if format == "json" {
		b, err := json.Marshal(printedMessage{MsgID: id, OffsetMsgID: m.MsgID(), Topic: m.Topic, Queue: m.QueueID,
			Offset: m.QueueOffset, Tags: m.Tags(), Keys: m.Keys(), ReconsumeTimes: m.ReconsumeTimes,
			StoreTimestamp: m.StoreTimestamp, Body: string(m.Body)})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintf(w, "msgId=%s queue=%d offset=%d tags=%s keys=%s body=%q\n", id, m.QueueID, m.QueueOffset,
		m.Tags(), strings.Join(m.Keys(), ","), m.Body)
	return err
}
