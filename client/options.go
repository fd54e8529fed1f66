package client

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Option configures a client (Producer, Admin, and the consumers). Options
// that do not concern a kind of client are ignored by it; each option's
// doc comment names its default.
type Option interface{ apply(*settings) }

// optionFunc adapts a function to Option. Kind-specific options elsewhere in
// the package are optionFuncs too (see settings.ext).
type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

// settings is the resolved configuration of one client.
type settings struct {
	nameServers     []string
	group           string
	instanceName    string
	logger          hclog.Logger
	sendTimeout     time.Duration
	requestTimeout  time.Duration
	dialTimeout     time.Duration
	retries         int
	compressThresh  int
	compressLevel   int
	maxMessageSize  int
	routeRefresh    time.Duration
	heartbeat       time.Duration
	selector        Selector
	faultAvoidance  bool
	failoverBackoff time.Duration
	batchMessages   int
	batchBytes      int
	batchLinger     time.Duration

	// ext holds settings of one client kind that are declared in that
	// kind's own files (consumers), keyed by a type private to that file,
	// so adding a kind never changes this struct. Read it with extValue.
	ext map[any]any
}

// Defaults, as named in the options' doc comments.
const (
	DefaultSendTimeout         = 3 * time.Second
	DefaultRequestTimeout      = 3 * time.Second
	DefaultRetries             = 2
	DefaultCompressThreshold   = 4 << 10
	DefaultCompressLevel       = 5
	DefaultMaxMessageSize      = 4 << 20
	DefaultRouteRefresh        = 30 * time.Second
	DefaultHeartbeatInterval   = 30 * time.Second
	DefaultGroup               = "DEFAULT_PRODUCER"
	DefaultNameServer          = "127.0.0.1:9876"
	defaultDialTimeout         = 2 * time.Second
	defaultFailoverBackoff     = 50 * time.Millisecond
	defaultFaultAvoidanceState = true
)

func defaultSettings() *settings {
	return &settings{
		nameServers:     []string{DefaultNameServer},
		group:           DefaultGroup,
		instanceName:    "DEFAULT",
		logger:          hclog.NewNullLogger(),
		sendTimeout:     DefaultSendTimeout,
		requestTimeout:  DefaultRequestTimeout,
		dialTimeout:     defaultDialTimeout,
		retries:         DefaultRetries,
		compressThresh:  DefaultCompressThreshold,
		compressLevel:   DefaultCompressLevel,
		maxMessageSize:  DefaultMaxMessageSize,
		routeRefresh:    DefaultRouteRefresh,
		heartbeat:       DefaultHeartbeatInterval,
		faultAvoidance:  defaultFaultAvoidanceState,
		failoverBackoff: defaultFailoverBackoff,
		batchMessages:   DefaultAsyncBatchMessages,
		batchBytes:      DefaultAsyncBatchBytes,
		ext:             map[any]any{},
	}
}

// newSettings applies opts over the defaults and validates the result.
func newSettings(opts []Option) (*settings, error) {
	s := defaultSettings()
	if v := os.Getenv("NAMESRV_ADDR"); v != "" {
		s.nameServers = splitAddrs(v)
	}
	for _, o := range opts {
		if o != nil {
			o.apply(s)
		}
	}
	return s, s.validate()
}

func (s *settings) validate() error {
	switch {
	case len(s.nameServers) == 0:
		return fmt.Errorf("%w: no name server", ErrInvalidOption)
	case s.group == "":
		return fmt.Errorf("%w: empty group", ErrInvalidOption)
	case s.sendTimeout <= 0 || s.requestTimeout <= 0:
		return fmt.Errorf("%w: timeouts must be positive", ErrInvalidOption)
	case s.retries < 0:
		return fmt.Errorf("%w: retries %d is negative", ErrInvalidOption, s.retries)
	case s.compressLevel < 1 || s.compressLevel > 9:
		return fmt.Errorf("%w: compress level %d not in 1..9", ErrInvalidOption, s.compressLevel)
	case s.maxMessageSize <= 0:
		return fmt.Errorf("%w: max message size must be positive", ErrInvalidOption)
	case s.batchMessages < 0 || s.batchBytes < 0 || s.batchLinger < 0:
		return fmt.Errorf("%w: batching limits must not be negative", ErrInvalidOption)
	case s.routeRefresh <= 0 || s.heartbeat <= 0:
		return fmt.Errorf("%w: intervals must be positive", ErrInvalidOption)
	}
	return nil
}

// extValue returns the kind-specific setting stored under key, or def.
func extValue[T any](s *settings, key any, def T) T {
	if v, ok := s.ext[key].(T); ok {
		return v
	}
	return def
}

// WithNameServers sets the name server addresses (host:port). Routes are
// asked of one at a time, moving to the next on failure. Default
// 127.0.0.1:9876, or the comma/semicolon-separated NAMESRV_ADDR environment
// variable when set.
func WithNameServers(addrs ...string) Option {
	return optionFunc(func(s *settings) {
		var out []string
		for _, a := range addrs {
			out = append(out, splitAddrs(a)...)
		}
		s.nameServers = out
	})
}

// WithGroup sets the producer or consumer group. Default "DEFAULT_PRODUCER"
// (consumers require one).
func WithGroup(group string) Option { return optionFunc(func(s *settings) { s.group = group }) }

// WithInstanceName sets the instance part of the client id (ip@instance).
// Default "DEFAULT", which the client replaces by the process id, as the
// RocketMQ clients do; give a transactional producer its own name.
func WithInstanceName(name string) Option {
	return optionFunc(func(s *settings) { s.instanceName = name })
}

// WithLogger sets the logger; the client logs under the name "raftmq-client".
// Default: no logging.
func WithLogger(l hclog.Logger) Option {
	return optionFunc(func(s *settings) {
		if l != nil {
			s.logger = l
		}
	})
}

// WithSendTimeout bounds one send, all retries and failover included (a
// context deadline that comes earlier wins); one request of it may take a
// third of it (at least 500 ms) before the send fails over to another
// node. Default 3 s.
func WithSendTimeout(d time.Duration) Option {
	return optionFunc(func(s *settings) { s.sendTimeout = d })
}

// WithRequestTimeout bounds every other request (routes, heartbeats, one
// admin request; an earlier context deadline wins). Default 3 s.
func WithRequestTimeout(d time.Duration) Option {
	return optionFunc(func(s *settings) { s.requestTimeout = d })
}

// WithRetries sets how many times a send is retried after a retriable
// answer (SYSTEM_BUSY, NO_PERMISSION, TOPIC_NOT_EXIST, ...). Failover
// failures — connection errors, timeouts, SERVICE_NOT_AVAILABLE and
// SYSTEM_ERROR while a group elects a leader — are retried beyond this
// count for as long as the send timeout lasts. Default 2.
func WithRetries(n int) Option { return optionFunc(func(s *settings) { s.retries = n }) }

// WithCompressThreshold sets the body size from which single messages are
// zlib-compressed (sysFlag bit 1). Default 4 KiB; a non-positive value turns
// compression off.
func WithCompressThreshold(n int) Option {
	return optionFunc(func(s *settings) { s.compressThresh = n })
}

// WithCompressLevel sets the zlib level, 1..9. Default 5.
func WithCompressLevel(level int) Option {
	return optionFunc(func(s *settings) { s.compressLevel = level })
}

// WithMaxMessageSize bounds a message body (a batch: its encoded body)
// before compression; larger sends fail with ErrMessageTooLarge without
// reaching a broker. Default 4 MiB.
func WithMaxMessageSize(n int) Option { return optionFunc(func(s *settings) { s.maxMessageSize = n }) }

// WithRouteRefreshInterval sets how often the routes of the topics in use
// are fetched again. Independently, a route is refreshed at once when a
// send fails over. Default 30 s.
func WithRouteRefreshInterval(d time.Duration) Option {
	return optionFunc(func(s *settings) { s.routeRefresh = d })
}

// WithHeartbeatInterval sets how often the client sends HEART_BEAT to every
// broker address it knows. Default 30 s.
func WithHeartbeatInterval(d time.Duration) Option {
	return optionFunc(func(s *settings) { s.heartbeat = d })
}

// WithSelector sets the producer's queue selector. Default: round robin
// with latency fault avoidance (see RoundRobinSelector and HashSelector).
func WithSelector(sel Selector) Option { return optionFunc(func(s *settings) { s.selector = sel }) }

// WithFaultAvoidance turns the default selector's latency fault avoidance on
// or off: a broker group that failed or answered slowly is skipped for a
// while, as the Java client's MQFaultStrategy. Default on.
func WithFaultAvoidance(on bool) Option {
	return optionFunc(func(s *settings) { s.faultAvoidance = on })
}

// WithDialTimeout bounds connecting to one address. Default 2 s.
func WithDialTimeout(d time.Duration) Option {
	return optionFunc(func(s *settings) { s.dialTimeout = d })
}

func splitAddrs(v string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(v); i++ {
		if i == len(v) || v[i] == ',' || v[i] == ';' || v[i] == ' ' {
			if i > start {
				out = append(out, v[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// resolvedInstance is the instance name used in client ids: the process id
// for the default name, as RocketMQ's ClientConfig.changeInstanceNameToPID.
func (s *settings) resolvedInstance() string {
	if s.instanceName == "DEFAULT" {
		return strconv.Itoa(os.Getpid())
	}
	return s.instanceName
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
func WithAsyncBatching(maxMessages, maxBytes int, linger time.Duration) Option {
	return optionFunc(func(s *settings) {
		s.batchMessages, s.batchBytes, s.batchLinger = maxMessages, maxBytes, linger
	})
}
