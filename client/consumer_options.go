package client

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
)

// consumerConfig is what both consumer kinds read: the common settings,
// the group and the options of its membership (rebalance, pull loops,
// offset store).
type consumerConfig struct {
	config
	group          string
	model          MessageModel
	from           ConsumeFrom
	allocate       AllocateStrategy
	pullBatch      int
	maxMsgs        int
	maxBytes       int64
	maxSpan        int64
	rebalanceEvery time.Duration
	offsetDir      string
	suspend        time.Duration
}

// consumerOpt is a ConsumerOpt that both consumers take.
type consumerOpt func(*consumerConfig)

func (o consumerOpt) applyPush(c *pushConfig) { o(&c.consumerConfig) }
func (o consumerOpt) applyPull(c *pullConfig) { o(&c.consumerConfig) }

// pullConfig is a PullConsumer's configuration. It has no options of its
// own (yet): PullConsumerOpt exists so that the push consumer's options
// are refused.
type pullConfig struct {
	consumerConfig
}

// Defaults of the consumer options, as named in their doc comments.
const (
	DefaultPullBatchSize      = 32
	DefaultPullThresholdMsgs  = 1000
	DefaultPullThresholdBytes = 100 << 20
	DefaultMaxSpan            = 2000
	DefaultRebalanceInterval  = 20 * time.Second
	// DefaultSuspendTimeout is how long a broker holds a pull that finds
	// nothing (long polling).
	DefaultSuspendTimeout = 20 * time.Second
)

func defaultConsumerConfig(group string) consumerConfig {
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return consumerConfig{
		config: defaultConfig(), group: group,
		from: ConsumeFromLast(), allocate: AllocateAveragely, pullBatch: DefaultPullBatchSize,
		maxMsgs: DefaultPullThresholdMsgs, maxBytes: DefaultPullThresholdBytes, maxSpan: DefaultMaxSpan,
		rebalanceEvery: DefaultRebalanceInterval, offsetDir: filepath.Join(home, ".raftmq", "offsets"),
		suspend: DefaultSuspendTimeout,
	}
}

// consumerSeq numbers the consumers of this process, so that several
// consumers with the default instance name get distinct client ids.
var consumerSeq atomic.Int64

// resolve validates the settings, after giving a consumer with the
// default instance name that is not the process's first a distinct one.
func (c *consumerConfig) resolve() error {
	if err := c.config.validate(); err != nil {
		return err
	}
	if n := consumerSeq.Add(1); c.instanceName == defaultInstanceName && n > 1 {
		c.instanceName = strconv.Itoa(os.Getpid()) + "#" + strconv.FormatInt(n, 10)
	}
	switch {
	case c.pullBatch < 1:
		return fmt.Errorf("%w: pull batch size %d is not positive", ErrInvalidOption, c.pullBatch)
	case c.maxMsgs < 1 || c.maxBytes < 1 || c.maxSpan < 1:
		return fmt.Errorf("%w: pull thresholds must be positive", ErrInvalidOption)
	case c.rebalanceEvery <= 0 || c.suspend <= 0:
		return fmt.Errorf("%w: consumer intervals must be positive", ErrInvalidOption)
	case c.allocate == nil:
		return fmt.Errorf("%w: nil allocate strategy", ErrInvalidOption)
	}
	return nil
}

// newPullConfig resolves the options of a pull consumer of group.
func newPullConfig(group string, opts []PullConsumerOpt) (*pullConfig, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	c := &pullConfig{consumerConfig: defaultConsumerConfig(group)}
	for _, o := range opts {
		if o != nil {
			o.applyPull(c)
		}
	}
	return c, c.resolve()
}

// WithMessageModel sets clustering or broadcasting. Default Clustering.
func WithMessageModel(m MessageModel) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.model = m })
}

// WithConsumeFrom sets where a group without a committed offset starts.
// Default ConsumeFromLast().
func WithConsumeFrom(f ConsumeFrom) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.from = f })
}

// WithAllocateStrategy sets how a clustering group splits queues among its
// consumers. Default AllocateAveragely.
func WithAllocateStrategy(s AllocateStrategy) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.allocate = s })
}

// WithPullBatchSize sets maxMsgNums of each pull. Default 32.
func WithPullBatchSize(n int) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.pullBatch = n })
}

// WithPullThresholds sets a queue's flow control: pulling pauses while its
// process queue caches more than maxMsgs messages or maxBytes of bodies, or
// spans more than maxSpan offsets between its oldest and newest message.
// Default 1000 messages, 100 MiB, span 2000 (RocketMQ's).
func WithPullThresholds(maxMsgs int, maxBytes int64, maxSpan int64) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.maxMsgs, c.maxBytes, c.maxSpan = maxMsgs, maxBytes, maxSpan })
}

// WithRebalanceInterval sets how often queues are reallocated besides
// at start and on NOTIFY_CONSUMER_IDS_CHANGED. Default 20 s.
func WithRebalanceInterval(d time.Duration) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.rebalanceEvery = d })
}

// WithOffsetStoreDir sets the directory of broadcasting consumers' offset
// files (<dir>/<group>/offsets.json). Default ~/.raftmq/offsets.
func WithOffsetStoreDir(dir string) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.offsetDir = dir })
}

// WithSuspendTimeout sets how long a broker may hold a pull that finds
// nothing. Default 20 s.
func WithSuspendTimeout(d time.Duration) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.suspend = d })
}
