package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// MessageModel says how a consumer group shares a topic's messages.
type MessageModel int

const (
	// Clustering: the group's consumers split the queues; each message is
	// consumed by one of them; offsets live on the brokers.
	Clustering MessageModel = iota
	// Broadcasting: every consumer of the group gets every message;
	// offsets live in a local file.
	Broadcasting
)

// String returns RocketMQ's name of the model.
func (m MessageModel) String() string {
	if m == Broadcasting {
		return protocol.Broadcasting
	}
	return protocol.Clustering
}

// ConsumeFrom says where a group starts on a queue for which the broker has
// no committed offset. As in RocketMQ, it does not apply when the broker
// answers QUERY_CONSUMER_OFFSET with 0 because the queue still holds its
// first message: a new group then starts at the beginning.
type ConsumeFrom struct {
	where string
	at    time.Time
}

// ConsumeFromLast starts at the end of the queue (the default).
func ConsumeFromLast() ConsumeFrom { return ConsumeFrom{where: protocol.ConsumeFromLastOffset} }

// ConsumeFromFirst starts at the beginning of the queue.
func ConsumeFromFirst() ConsumeFrom { return ConsumeFrom{where: protocol.ConsumeFromFirstOffset} }

// ConsumeFromTimestamp starts at the first message stored at or after t.
func ConsumeFromTimestamp(t time.Time) ConsumeFrom {
	return ConsumeFrom{where: protocol.ConsumeFromTimestamp, at: t}
}

// String returns RocketMQ's name of the starting point.
func (f ConsumeFrom) String() string {
	if f.where == "" {
		return ConsumeFromLast().where
	}
	return f.where
}

// ConsumeResult is what a push consumer's handler says about a batch.
type ConsumeResult int

const (
	// ConsumeSuccess acknowledges the batch.
	ConsumeSuccess ConsumeResult = iota
	// ConsumeRetryLater asks for the batch again later: in clustering it
	// is sent back to the broker (%RETRY%group, delay level 3 +
	// reconsumeTimes) or, if that fails, kept and consumed again locally.
	// In broadcasting it is dropped, as in RocketMQ.
	ConsumeRetryLater
)

// MessageHandler consumes a batch (WithConsumeBatchSize, default 1) of one
// queue. It runs on the consumer's worker pool and must be safe for
// concurrent use. A panic counts as ConsumeRetryLater.
type MessageHandler func(ctx context.Context, msgs []*message.MessageExt) ConsumeResult

// Consumer errors.
var (
	// ErrNoSubscription: Start was called with nothing to consume.
	ErrNoSubscription = errors.New("client: no subscription")
	// ErrQueueNotAssigned: the queue is not consumed by this consumer.
	ErrQueueNotAssigned = errors.New("client: queue not assigned")
	// ErrStarted: the call must come before Start.
	ErrStarted = errors.New("client: already started")
)

// Consumer defaults, as named in the options' doc comments.
const (
	DefaultConsumeGoroutines  = 20
	DefaultConsumeBatchSize   = 1
	DefaultPullBatchSize      = 32
	DefaultPullThresholdMsgs  = 1000
	DefaultPullThresholdBytes = 100 << 20
	DefaultMaxSpan            = 2000
	DefaultRebalanceInterval  = 20 * time.Second
	DefaultCommitInterval     = 5 * time.Second
	DefaultMaxReconsumeTimes  = protocol.DefaultMaxReconsumeTimes
	DefaultLocalRetryDelay    = 5 * time.Second
	// DefaultOrderlySuspend is how long an orderly queue pauses after
	// its handler asked for a retry.
	DefaultOrderlySuspend = time.Second
	// DefaultSuspendTimeout is how long a broker holds a pull that finds
	// nothing (long polling).
	DefaultSuspendTimeout = 20 * time.Second
)

// consumerSettings are the options only consumers read (settings.ext).
type consumerSettings struct {
	model          MessageModel
	from           ConsumeFrom
	allocate       AllocateStrategy
	goroutines     int
	batchSize      int
	pullBatch      int
	maxMsgs        int
	maxBytes       int64
	maxSpan        int64
	rebalanceEvery time.Duration
	commitEvery    time.Duration
	offsetDir      string
	maxReconsume   int
	retryDelay     time.Duration
	suspend        time.Duration
	orderly        bool
	suspendQueue   time.Duration
}

type consumerSettingsKey struct{}

func defaultConsumerSettings() consumerSettings {
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return consumerSettings{
		from: ConsumeFromLast(), allocate: AllocateAveragely,
		goroutines: DefaultConsumeGoroutines, batchSize: DefaultConsumeBatchSize, pullBatch: DefaultPullBatchSize,
		maxMsgs: DefaultPullThresholdMsgs, maxBytes: DefaultPullThresholdBytes, maxSpan: DefaultMaxSpan,
		rebalanceEvery: DefaultRebalanceInterval, commitEvery: DefaultCommitInterval,
		offsetDir: filepath.Join(home, ".raftmq", "offsets"), maxReconsume: DefaultMaxReconsumeTimes,
		retryDelay: DefaultLocalRetryDelay, suspend: DefaultSuspendTimeout, suspendQueue: DefaultOrderlySuspend,
	}
}

// consumerOption changes the consumer settings held in settings.ext.
func consumerOption(f func(*consumerSettings)) Option {
	return optionFunc(func(s *settings) {
		cs := extValue(s, consumerSettingsKey{}, defaultConsumerSettings())
		f(&cs)
		s.ext[consumerSettingsKey{}] = cs
	})
}

func (cs consumerSettings) validate() error {
	switch {
	case cs.goroutines < 1 || cs.batchSize < 1 || cs.pullBatch < 1:
		return fmt.Errorf("%w: goroutines, batch sizes must be at least 1", ErrInvalidOption)
	case cs.maxMsgs < 1 || cs.maxBytes < 1 || cs.maxSpan < 1:
		return fmt.Errorf("%w: pull thresholds must be positive", ErrInvalidOption)
	case cs.rebalanceEvery <= 0 || cs.commitEvery <= 0 || cs.retryDelay <= 0 || cs.suspend <= 0 || cs.suspendQueue <= 0:
		return fmt.Errorf("%w: consumer intervals must be positive", ErrInvalidOption)
	case cs.allocate == nil:
		return fmt.Errorf("%w: nil allocate strategy", ErrInvalidOption)
	}
	return nil
}

// WithMessageModel sets clustering or broadcasting. Default Clustering.
func WithMessageModel(m MessageModel) Option {
	return consumerOption(func(cs *consumerSettings) { cs.model = m })
}

// WithConsumeFrom sets where a group without a committed offset starts.
// Default ConsumeFromLast().
func WithConsumeFrom(f ConsumeFrom) Option {
	return consumerOption(func(cs *consumerSettings) { cs.from = f })
}

// WithAllocateStrategy sets how a clustering group splits queues among its
// consumers. Default AllocateAveragely.
func WithAllocateStrategy(s AllocateStrategy) Option {
	return consumerOption(func(cs *consumerSettings) { cs.allocate = s })
}

// WithConsumeGoroutines sets the push consumer's worker pool size.
// Default 20.
func WithConsumeGoroutines(n int) Option {
	return consumerOption(func(cs *consumerSettings) { cs.goroutines = n })
}

// WithConsumeBatchSize sets the most messages handed to one handler call.
// Default 1.
func WithConsumeBatchSize(n int) Option {
	return consumerOption(func(cs *consumerSettings) { cs.batchSize = n })
}

// WithPullBatchSize sets maxMsgNums of each pull. Default 32.
func WithPullBatchSize(n int) Option {
	return consumerOption(func(cs *consumerSettings) { cs.pullBatch = n })
}

// WithPullThresholds sets a queue's flow control: pulling pauses while its
// process queue caches more than maxMsgs messages or maxBytes of bodies, or
// spans more than maxSpan offsets between its oldest and newest message.
// Default 1000 messages, 100 MiB, span 2000 (RocketMQ's).
func WithPullThresholds(maxMsgs int, maxBytes int64, maxSpan int64) Option {
	return consumerOption(func(cs *consumerSettings) { cs.maxMsgs, cs.maxBytes, cs.maxSpan = maxMsgs, maxBytes, maxSpan })
}

// WithRebalanceInterval sets how often queues are reallocated besides
// at start and on NOTIFY_CONSUMER_IDS_CHANGED. Default 20 s.
func WithRebalanceInterval(d time.Duration) Option {
	return consumerOption(func(cs *consumerSettings) { cs.rebalanceEvery = d })
}

// WithCommitInterval sets how often a push consumer commits its offsets
// (also on Close). Default 5 s.
func WithCommitInterval(d time.Duration) Option {
	return consumerOption(func(cs *consumerSettings) { cs.commitEvery = d })
}

// WithOffsetStoreDir sets the directory of broadcasting consumers' offset
// files (<dir>/<group>/offsets.json). Default ~/.raftmq/offsets.
func WithOffsetStoreDir(dir string) Option {
	return consumerOption(func(cs *consumerSettings) { cs.offsetDir = dir })
}

// WithMaxReconsumeTimes sets how often a message is retried before the
// broker moves it to %DLQ%group. Default 16.
func WithMaxReconsumeTimes(n int) Option {
	return consumerOption(func(cs *consumerSettings) { cs.maxReconsume = n })
}

// WithLocalRetryDelay sets how long a message whose send-back failed waits
// before it is consumed again locally. Default 5 s (RocketMQ's).
func WithLocalRetryDelay(d time.Duration) Option {
	return consumerOption(func(cs *consumerSettings) { cs.retryDelay = d })
}

// WithSuspendTimeout sets how long a broker may hold a pull that finds
// nothing. Default 20 s.
func WithSuspendTimeout(d time.Duration) Option {
	return consumerOption(func(cs *consumerSettings) { cs.suspend = d })
}

// consumerSeq numbers the consumers of this process, so that several
// consumers with the default instance name get distinct client ids.
var consumerSeq atomic.Int64

// newConsumerSettings resolves the options of a consumer of group.
func newConsumerSettings(group string, opts []Option) (*settings, consumerSettings, error) {
	if group == "" {
		return nil, consumerSettings{}, fmt.Errorf("%w: empty group", ErrInvalidOption)
	}
	cfg, err := newSettings(opts)
	if err != nil {
		return nil, consumerSettings{}, err
	}
	cfg.group = group
	if n := consumerSeq.Add(1); cfg.instanceName == "DEFAULT" && n > 1 {
		cfg.instanceName = strconv.Itoa(os.Getpid()) + "#" + strconv.FormatInt(n, 10)
	}
	cs := extValue(cfg, consumerSettingsKey{}, defaultConsumerSettings())
	return cfg, cs, cs.validate()
}

// subscription is one topic's filter, as announced in heartbeats.
type subscription struct {
	topic   string
	expr    string
	tags    []string // nil: all
	version int64
	handler MessageHandler
}

// parseSubscription parses a tag expression (protocol.ParseTagExpression):
// "*" or "" for all, else tags separated by "||", trimmed, each once.
func parseSubscription(topic, expr string) (*subscription, error) {
	if topic == "" {
		return nil, fmt.Errorf("%w: empty topic", ErrInvalidOption)
	}
	tags, all, err := protocol.ParseTagExpression(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	s := &subscription{topic: topic, expr: strings.TrimSpace(expr), tags: tags, version: time.Now().UnixMilli()}
	if all {
		s.expr = protocol.SubAll
	}
	return s, nil
}

// matches reports whether a message's tags are wanted (the broker filters
// by tag hash only, so collisions are dropped here).
func (s *subscription) matches(m *message.MessageExt) bool {
	return s.tags == nil || slices.Contains(s.tags, m.Tags())
}

// data is the heartbeat form of the subscription.
func (s *subscription) data() protocol.SubscriptionData {
	sd := protocol.SubscriptionData{Topic: s.topic, SubString: s.expr, TagsSet: []string{}, CodeSet: protocol.CodeSet{},
		SubVersion: s.version, ExpressionType: protocol.ExprTag}
	for _, t := range s.tags {
		sd.TagsSet = append(sd.TagsSet, t)
		sd.CodeSet = append(sd.CodeSet, message.TagsHashCode(t))
	}
	return sd
}
