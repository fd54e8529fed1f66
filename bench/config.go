package bench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

// Send modes.
const (
	ModeSync  = "sync"
	ModeAsync = "async"
	ModeBatch = "batch"
	// ModeTxn sends each message in a transaction the producer commits:
	// a half message, then END_TRANSACTION (commit) for it.
	ModeTxn = "txn"
)

// Config describes a workload. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	NameServers []string
	// Credentials sign every request (ACL); zero: the SDK's default (the
	// RAFTMQ_ACCESS_KEY environment, else unsigned).
	Credentials client.Credentials
	// TLS, if set, is the clients' TLS (client.WithTLS).
	TLS   *tls.Config
	Topic string
	// Size is the message body size in bytes.
	Size int
	// Clients is the number of producers (produce, e2e) or pull consumers
	// (consume), each with its own connections.
	Clients int
	// Msgs is the total message count over all clients; when 0 the
	// workload runs for Duration.
	Msgs     int
	Duration time.Duration
	// Mode is ModeSync, ModeAsync, ModeBatch or ModeTxn.
	Mode string
	// Batch is the messages per SendBatch (batch mode) or the maxMsgNums
	// of each pull (consume, e2e).
	Batch int
	// InFlight bounds the asynchronous sends outstanding per client.
	InFlight int
	// Rate, if positive, paces produce to this many messages per second
	// over all clients (0: as fast as they go): a steady load beside
	// another workload.
	Rate int
	// Queues, if positive, creates (or updates) the topic with that many
	// queues per broker group before the workload starts.
	Queues int
	// Topics, if above 1, spreads the workload over that many topics named
	// Topic-0 … Topic-(n-1), each with Queues queues: a broker group holds
	// at most 1024 queues per topic, so 10,000 queues are 10 topics.
	Topics int
	// Group is the consumer group (consume, e2e); default a fresh one, so
	// the backlog is read from the first offset.
	Group string
	// Props gives each produced message, numbered 0, 1, ... over all
	// clients, the property n = number mod 10 and the tag t<number mod 4>:
	// a backlog for SQL92 consumes, in which "n < 5" selects half, "n = 0"
	// a tenth and "TAGS = 't0' AND n = 0" a twentieth.
	Props bool
	// SQL92, when set, makes consume subscribe its fresh group with this
	// SQL92 condition (the broker filters; the group's rebalance spreads
	// the queues) instead of assigning the queues unfiltered; Msgs is then
	// the count expected to match.
	SQL92 string
	// Push makes e2e receive with one push consumer (a handler called per
	// message, as applications consume) instead of pull consumers' Poll.
	Push bool
	// Idle ends a consume (or the tail of an e2e) when no message arrived
	// for that long: a backlog shorter than Msgs.
	Idle time.Duration
	// Progress receives the live progress line (nil: none).
	Progress io.Writer
}

// DefaultConfig is 1 KiB messages, 1 client, 10,000 messages, async with
// 128 in flight per client, batches of 32, topic raftmq-bench.
func DefaultConfig() Config {
	return Config{NameServers: []string{"127.0.0.1:9876"}, Topic: "raftmq-bench", Size: 1024, Clients: 1,
		Msgs: 10000, Mode: ModeAsync, Batch: 32, InFlight: 128, Idle: 10 * time.Second}
}

// validate fills zero fields from DefaultConfig and reports every problem.
func (c *Config) validate() error {
	def := DefaultConfig()
	if len(c.NameServers) == 0 {
		c.NameServers = def.NameServers
	}
	if c.Topic == "" {
		c.Topic = def.Topic
	}
	if c.Mode == "" {
		c.Mode = def.Mode
	}
	if c.Batch == 0 {
		c.Batch = def.Batch
	}
	if c.InFlight == 0 {
		c.InFlight = def.InFlight
	}
	if c.Clients == 0 {
		c.Clients = def.Clients
	}
	if c.Topics == 0 {
		c.Topics = 1
	}
	if c.Idle == 0 {
		c.Idle = def.Idle
	}
	var errs []error
	if c.Size < 8 {
		errs = append(errs, fmt.Errorf("bench: size %d: want at least 8 bytes (e2e keeps a timestamp in the body)", c.Size))
	}
	if c.Msgs < 0 || c.Duration < 0 || (c.Msgs == 0 && c.Duration == 0) {
		errs = append(errs, errors.New("bench: want a positive message count or duration"))
	}
	switch c.Mode {
	case ModeSync, ModeAsync, ModeBatch, ModeTxn:
	default:
		errs = append(errs, fmt.Errorf("bench: mode %q: want sync, async, batch or txn", c.Mode))
	}
	if c.Clients < 0 || c.Batch < 0 || c.InFlight < 0 || c.Queues < 0 || c.Topics < 0 || c.Rate < 0 {
		errs = append(errs, errors.New("bench: clients, batch, in-flight and queues must not be negative"))
	}
	return errors.Join(errs...)
}

// share is client i's part of the total count (0: unbounded, run for the
// duration).
func (c *Config) share(i int) int {
	if c.Msgs == 0 {
		return 0
	}
	n := c.Msgs / c.Clients
	if i < c.Msgs%c.Clients {
		n++
	}
	return n
}

// instance names client i of a workload uniquely, so several clients of
// one process get distinct client ids.
func instance(role string, i int) string {
	return role + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(i)
}

// payload is a random body of size bytes (random so no layer can win by
// compressing it).
func payload(size int) []byte {
	b := make([]byte, size)
	_, _ = rand.Read(b)
	return b
}

// topics are the workload's topic names.
func (c *Config) topics() []string {
	if c.Topics <= 1 {
		return []string{c.Topic}
	}
	ts := make([]string, c.Topics)
	for i := range ts {
		ts[i] = c.Topic + "-" + strconv.Itoa(i)
	}
	return ts
}

// prepareTopics prepares every topic of the workload and returns all their
// queues.
func prepareTopics(ctx context.Context, c *Config) ([]client.MessageQueue, error) {
	adm, err := client.NewAdmin(client.WithNameServers(c.NameServers...), client.WithCredentials(c.Credentials), client.WithTLS(c.TLS))
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	var all []client.MessageQueue
	for _, t := range c.topics() {
		qs, err := prepareTopic(ctx, adm, t, c.Queues)
		if err != nil {
			return nil, err
		}
		all = append(all, qs...)
	}
	return all, nil
}

// prepareTopic creates topic with queues queues, if asked, and waits until
// the name server routes it, retrying while the group elects a leader. It
// returns the topic's queues.
func prepareTopic(ctx context.Context, adm *client.Admin, topic string, queues int) ([]client.MessageQueue, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last error
	for created := queues == 0; ; {
		if !created {
			var be *client.Error
			if _, err := adm.CreateTopic(ctx, client.TopicConfig{Topic: topic, Queues: queues}); errors.As(err, &be) && !be.Retriable() {
				return nil, fmt.Errorf("bench: create topic %s: %w", topic, err)
			} else if err != nil {
				last = err
			} else {
				created = true
			}
		}
		if created {
			qs, err := routeQueues(ctx, adm, topic)
			switch {
			case err != nil:
				last = err
			case queues > 0 && len(qs)%queues != 0, len(qs) == 0:
				last = fmt.Errorf("bench: topic %s routes %d queues, want %d per group", topic, len(qs), queues)
			default:
				return qs, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("bench: topic %s not ready: %w", topic, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func routeQueues(ctx context.Context, adm *client.Admin, topic string) ([]client.MessageQueue, error) {
	rd, err := adm.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	var qs []client.MessageQueue
	for _, qd := range rd.QueueDatas {
		for id := range qd.ReadQueueNums {
			qs = append(qs, client.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: id})
		}
	}
	return qs, nil
}

// newMessage is a message of topic with body.
func newMessage(topic string, body []byte) *message.Message {
	return &message.Message{Topic: topic, Body: body}
}
