package client

import (
	"fmt"
	"time"

	"github.com/raftmq/raftmq/protocol"
)

// pushConfig is a PushConsumer's configuration: the consumers' settings
// and the push consumer's own (its worker pool, commits, retries and
// orderly mode).
type pushConfig struct {
	consumerConfig
	goroutines   int
	batchSize    int
	commitEvery  time.Duration
	maxReconsume int
	retryDelay   time.Duration
	orderly      bool
	suspendQueue time.Duration
}

// pushOpt is a PushConsumerOpt that only push consumers take.
type pushOpt func(*pushConfig)

func (o pushOpt) applyPush(c *pushConfig) { o(c) }

// Defaults of the push consumer options, as named in their doc comments.
const (
	DefaultConsumeGoroutines = 20
	DefaultConsumeBatchSize  = 1
	DefaultCommitInterval    = 5 * time.Second
	DefaultMaxReconsumeTimes = protocol.DefaultMaxReconsumeTimes
	DefaultLocalRetryDelay   = 5 * time.Second
	// DefaultOrderlySuspend is how long an orderly queue pauses after
	// its handler asked for a retry.
	DefaultOrderlySuspend = time.Second
)

// newPushConfig resolves the options of a push consumer of group.
func newPushConfig(group string, opts []PushConsumerOpt) (*pushConfig, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	c := &pushConfig{
		consumerConfig: defaultConsumerConfig(group),
		goroutines:     DefaultConsumeGoroutines, batchSize: DefaultConsumeBatchSize,
		commitEvery: DefaultCommitInterval, maxReconsume: DefaultMaxReconsumeTimes,
		retryDelay: DefaultLocalRetryDelay, suspendQueue: DefaultOrderlySuspend,
	}
	for _, o := range opts {
		if o != nil {
			o.applyPush(c)
		}
	}
	if err := c.resolve(); err != nil {
		return nil, err
	}
	switch {
	case c.goroutines < 1 || c.batchSize < 1:
		return nil, fmt.Errorf("%w: goroutines, batch sizes must be at least 1", ErrInvalidOption)
	case c.commitEvery <= 0 || c.retryDelay <= 0 || c.suspendQueue <= 0:
		return nil, fmt.Errorf("%w: consumer intervals must be positive", ErrInvalidOption)
	}
	return c, nil
}

// WithConsumeGoroutines sets the push consumer's worker pool size.
// Default 20.
func WithConsumeGoroutines(n int) PushConsumerOpt {
	return pushOpt(func(c *pushConfig) { c.goroutines = n })
}

// WithConsumeBatchSize sets the most messages handed to one handler call.
// Default 1.
func WithConsumeBatchSize(n int) PushConsumerOpt {
	return pushOpt(func(c *pushConfig) { c.batchSize = n })
}

// WithCommitInterval sets how often a push consumer commits its offsets
// (also on Close). Default 5 s.
func WithCommitInterval(d time.Duration) PushConsumerOpt {
	return pushOpt(func(c *pushConfig) { c.commitEvery = d })
}

// WithMaxReconsumeTimes sets how often a message is retried before the
// broker moves it to %DLQ%group. Default 16.
func WithMaxReconsumeTimes(n int) PushConsumerOpt {
	return pushOpt(func(c *pushConfig) { c.maxReconsume = n })
}

// WithLocalRetryDelay sets how long a message whose send-back failed waits
// before it is consumed again locally. Default 5 s (RocketMQ's).
func WithLocalRetryDelay(d time.Duration) PushConsumerOpt {
	return pushOpt(func(c *pushConfig) { c.retryDelay = d })
}

// WithOrderly consumes each queue in order, one batch at a time, holding
// its broker lock in clustering; a handler's ConsumeRetryLater suspends the
// queue (WithOrderlySuspend) and consumes the same messages again, with
// reconsumeTimes+1, until WithMaxReconsumeTimes, after which they go to the
// broker's %DLQ%group. Default off (concurrent).
func WithOrderly() PushConsumerOpt { return pushOpt(func(c *pushConfig) { c.orderly = true }) }

// WithOrderlySuspend sets how long an orderly queue pauses after its
// handler asked for a retry. Default 1 s.
func WithOrderlySuspend(d time.Duration) PushConsumerOpt {
	return pushOpt(func(c *pushConfig) { c.suspendQueue = d })
}
