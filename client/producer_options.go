package client

import (
	"fmt"
	"time"
)

// producerConfig is a Producer's configuration: the common settings and
// the producer's own.
type producerConfig struct {
	config
	group           string
	sendTimeout     time.Duration
	retries         int
	compressThresh  int
	compressLevel   int
	maxMessageSize  int
	selector        Selector
	faultAvoidance  bool
	failoverBackoff time.Duration
	batchMessages   int
	batchBytes      int
	batchLinger     time.Duration
}

// sendOpt is a SendOpt: it changes what both producers read.
type sendOpt func(*producerConfig)

func (o sendOpt) applyProducer(c *producerConfig) { o(c) }
func (o sendOpt) applyTransaction(c *txConfig)    { o(&c.producerConfig) }

// producerOpt is a ProducerOpt that only a Producer takes.
type producerOpt func(*producerConfig)

func (o producerOpt) applyProducer(c *producerConfig) { o(c) }

// Defaults of the producer options, as named in their doc comments.
const (
	DefaultSendTimeout       = 3 * time.Second
	DefaultRetries           = 2
	DefaultCompressThreshold = 4 << 10
	DefaultCompressLevel     = 5
	DefaultMaxMessageSize    = 4 << 20
	// DefaultAsyncBatchMessages and DefaultAsyncBatchBytes are the
	// auto-batching limits (WithAsyncBatching).
	DefaultAsyncBatchMessages = 256
	DefaultAsyncBatchBytes    = 1 << 20
	defaultFailoverBackoff    = 50 * time.Millisecond
)

// newProducerConfig resolves the options of a producer of group.
func newProducerConfig(group string, opts []ProducerOpt) (*producerConfig, error) {
	c, err := defaultProducerConfig(group)
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		if o != nil {
			o.applyProducer(c)
		}
	}
	if err := c.validateAll(); err != nil {
		return nil, err
	}
	return c, nil
}

// defaultProducerConfig is the configuration of a producer of group
// before options.
func defaultProducerConfig(group string) (*producerConfig, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	return &producerConfig{
		config:          defaultConfig(),
		group:           group,
		sendTimeout:     DefaultSendTimeout,
		retries:         DefaultRetries,
		compressThresh:  DefaultCompressThreshold,
		compressLevel:   DefaultCompressLevel,
		maxMessageSize:  DefaultMaxMessageSize,
		faultAvoidance:  true,
		failoverBackoff: defaultFailoverBackoff,
		batchMessages:   DefaultAsyncBatchMessages,
		batchBytes:      DefaultAsyncBatchBytes,
	}, nil
}

// validateAll validates the common settings, then the producer's.
func (c *producerConfig) validateAll() error {
	if err := c.config.validate(); err != nil {
		return err
	}
	return c.validate()
}

func (c *producerConfig) validate() error {
	switch {
	case c.sendTimeout <= 0:
		return fmt.Errorf("%w: timeouts must be positive", ErrInvalidOption)
	case c.retries < 0:
		return fmt.Errorf("%w: retries %d is negative", ErrInvalidOption, c.retries)
	case c.compressLevel < 1 || c.compressLevel > 9:
		return fmt.Errorf("%w: compress level %d not in 1..9", ErrInvalidOption, c.compressLevel)
	case c.maxMessageSize <= 0:
		return fmt.Errorf("%w: max message size must be positive", ErrInvalidOption)
	case c.batchMessages < 0 || c.batchBytes < 0 || c.batchLinger < 0:
		return fmt.Errorf("%w: batching limits must not be negative", ErrInvalidOption)
	}
	return nil
}

// WithSendTimeout bounds one send, all retries and failover included (a
// context deadline that comes earlier wins); one request of it may take a
// third of it (at least 500 ms) before the send fails over to another
// node. Default 3 s.
func WithSendTimeout(d time.Duration) SendOpt {
	return sendOpt(func(c *producerConfig) { c.sendTimeout = d })
}

// WithRetries sets how many times a send is retried after a retriable
// answer (SYSTEM_BUSY, NO_PERMISSION, TOPIC_NOT_EXIST, ...). Failover
// failures — connection errors, timeouts, SERVICE_NOT_AVAILABLE and
// SYSTEM_ERROR while a group elects a leader — are retried beyond this
// count for as long as the send timeout lasts. Default 2.
func WithRetries(n int) SendOpt { return sendOpt(func(c *producerConfig) { c.retries = n }) }

// WithCompressThreshold sets the body size from which single messages are
// zlib-compressed (sysFlag bit 1). Default 4 KiB; a non-positive value turns
// compression off.
func WithCompressThreshold(n int) SendOpt {
	return sendOpt(func(c *producerConfig) { c.compressThresh = n })
}

// WithCompressLevel sets the zlib level, 1..9. Default 5.
func WithCompressLevel(level int) SendOpt {
	return sendOpt(func(c *producerConfig) { c.compressLevel = level })
}

// WithMaxMessageSize bounds a message body (a batch: its encoded body)
// before compression; larger sends fail with ErrMessageTooLarge without
// reaching a broker. Default 4 MiB.
func WithMaxMessageSize(n int) SendOpt {
	return sendOpt(func(c *producerConfig) { c.maxMessageSize = n })
}

// WithSelector sets the producer's queue selector. Default: round robin
// with latency fault avoidance (see RoundRobinSelector and HashSelector).
func WithSelector(sel Selector) SendOpt {
	return sendOpt(func(c *producerConfig) { c.selector = sel })
}

// WithFaultAvoidance turns the default selector's latency fault avoidance on
// or off: a broker group that failed or answered slowly is skipped for a
// while, as the Java client's MQFaultStrategy. Default on.
func WithFaultAvoidance(on bool) SendOpt {
	return sendOpt(func(c *producerConfig) { c.faultAvoidance = on })
}

// WithAsyncBatching sets how SendAsync coalesces messages for one queue
// into SEND_BATCH_MESSAGE requests: at most maxMessages messages and
// maxBytes of batch body per request (capped by WithMaxMessageSize), one
// request per queue in flight; messages sent while one is in flight wait
// for it and go together in the next. linger > 0 also makes a message that
// finds nothing in flight wait up to linger for company (default 0: it goes
// at once). maxMessages 0 or 1 turns batching off: every SendAsync is its
// own request. Default 256 messages, 1 MiB, no linger. Send, SendOneway and
// SendBatch never batch. With the default selector a topic's batched
// messages stay on one queue until 64 wait on it and then move to the
// next (sticky, as Kafka's partitioner), so batches form however many
// queues the topic has; a WithSelector selector is asked per message.
func WithAsyncBatching(maxMessages, maxBytes int, linger time.Duration) ProducerOpt {
	return producerOpt(func(c *producerConfig) {
		c.batchMessages, c.batchBytes, c.batchLinger = maxMessages, maxBytes, linger
	})
}
