package client

import (
	"crypto/tls"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/protocol"
)

// Options are typed by the kind of client they configure, so that an
// option a kind does not read is a compile error rather than ignored:
//
//	Opt                        every client (NewAdmin and the ones below)
//	└── MemberOpt              a group member: a producer or a consumer
//	    ├── SendOpt            both producers
//	    │   ├── ProducerOpt        NewProducer
//	    │   └── TransactionProducerOpt  NewTransactionProducer
//	    └── ConsumerOpt        both consumers
//	        ├── PushConsumerOpt    NewPushConsumer
//	        └── PullConsumerOpt    NewPullConsumer
//
// An Opt is also a MemberOpt; a MemberOpt is also a SendOpt and a
// ConsumerOpt; a SendOpt is also a ProducerOpt and a
// TransactionProducerOpt; a ConsumerOpt is also a PushConsumerOpt and a
// PullConsumerOpt. Options about a client id, routes kept up to date and
// heartbeats are MemberOpts: an Admin has none of them. The common options are in this
// file, the others beside their client kind (producer_options.go,
// transaction_options.go, consumer_options.go, push_consumer_options.go).
// Each option's doc comment names its default; a nil option is skipped.

// Opt configures any client: an Admin, a Producer or a consumer.
type Opt interface {
	MemberOpt
	apply(*config)
}

// MemberOpt configures a group member: a Producer or a consumer, which
// have a client id, keep their routes fresh and heartbeat the brokers.
// Every Opt is one.
type MemberOpt interface {
	SendOpt
	ConsumerOpt
}

// SendOpt configures either producer (NewProducer,
// NewTransactionProducer): how messages are sent. Every MemberOpt is one.
type SendOpt interface {
	ProducerOpt
	TransactionProducerOpt
}

// ProducerOpt configures a Producer (NewProducer). Every SendOpt is one.
type ProducerOpt interface{ applyProducer(*producerConfig) }

// TransactionProducerOpt configures a TransactionProducer
// (NewTransactionProducer). Every SendOpt is one.
type TransactionProducerOpt interface{ applyTransaction(*txConfig) }

// ConsumerOpt configures either consumer (NewPushConsumer,
// NewPullConsumer). Every Opt is one.
type ConsumerOpt interface {
	PushConsumerOpt
	PullConsumerOpt
}

// PushConsumerOpt configures a PushConsumer (NewPushConsumer). Every
// ConsumerOpt is one.
type PushConsumerOpt interface{ applyPush(*pushConfig) }

// PullConsumerOpt configures a PullConsumer (NewPullConsumer). Every
// ConsumerOpt is one.
type PullConsumerOpt interface{ applyPull(*pullConfig) }

// opt is an Opt: it changes what every client has.
type opt func(*config)

func (o opt) apply(c *config)                 { o(c) }
func (o opt) applyProducer(c *producerConfig) { o(&c.config) }
func (o opt) applyTransaction(c *txConfig)    { o(&c.config) }
func (o opt) applyPush(c *pushConfig)         { o(&c.config) }
func (o opt) applyPull(c *pullConfig)         { o(&c.config) }

// memberOpt is a MemberOpt: it changes what producers and consumers have
// in common with every client but an Admin reads.
type memberOpt func(*config)

func (o memberOpt) applyProducer(c *producerConfig) { o(&c.config) }
func (o memberOpt) applyTransaction(c *txConfig)    { o(&c.config) }
func (o memberOpt) applyPush(c *pushConfig)         { o(&c.config) }
func (o memberOpt) applyPull(c *pullConfig)         { o(&c.config) }

// config is what every client kind reads: the core's connections, routes,
// heartbeats and logger.
type config struct {
	nameServers    []string
	instanceName   string
	logger         hclog.Logger
	requestTimeout time.Duration
	dialTimeout    time.Duration
	routeRefresh   time.Duration
	heartbeat      time.Duration
	traceTopic     string       // "" unless WithTrace (trace.go)
	credentials    *Credentials // nil: unsigned (credentials.go)
	tls            *tls.Config
}

// Defaults of the common options, as named in their doc comments.
const (
	DefaultNameServer        = "127.0.0.1:9876"
	DefaultRequestTimeout    = 3 * time.Second
	DefaultRouteRefresh      = 30 * time.Second
	DefaultHeartbeatInterval = 30 * time.Second
	defaultDialTimeout       = 2 * time.Second
	// defaultInstanceName is replaced by the process id in client ids.
	defaultInstanceName = "DEFAULT"
)

// defaultConfig is the common configuration before options: NAMESRV_ADDR,
// when set, gives the name servers.
func defaultConfig() config {
	c := config{
		nameServers:    []string{DefaultNameServer},
		instanceName:   defaultInstanceName,
		logger:         hclog.NewNullLogger(),
		requestTimeout: DefaultRequestTimeout,
		dialTimeout:    defaultDialTimeout,
		routeRefresh:   DefaultRouteRefresh,
		heartbeat:      DefaultHeartbeatInterval,
	}
	if v := os.Getenv("NAMESRV_ADDR"); v != "" {
		c.nameServers = splitAddrs(v)
	}
	if cr, ok := CredentialsFromEnv(); ok {
		c.credentials = &cr
	}
	return c
}

// newConfig applies opts over the defaults and validates the result (an
// Admin's configuration).
func newConfig(opts []Opt) (*config, error) {
	c := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return &c, c.validate()
}

func (c *config) validate() error {
	switch {
	case len(c.nameServers) == 0:
		return fmt.Errorf("%w: no name server", ErrInvalidOption)
	case c.requestTimeout <= 0:
		return fmt.Errorf("%w: timeouts must be positive", ErrInvalidOption)
	case c.routeRefresh <= 0 || c.heartbeat <= 0:
		return fmt.Errorf("%w: intervals must be positive", ErrInvalidOption)
	}
	return nil
}

// checkGroup reports an empty or invalid producer or consumer group as an
// ErrInvalidOption.
func checkGroup(group string) error {
	if err := protocol.ValidateGroup(group); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return nil
}

// resolvedInstance is the instance name used in client ids: the process id
// for the default name, as RocketMQ's ClientConfig.changeInstanceNameToPID.
func (c *config) resolvedInstance() string {
	if c.instanceName == defaultInstanceName {
		return strconv.Itoa(os.Getpid())
	}
	return c.instanceName
}

// WithNameServers sets the name server addresses (host:port). Routes are
// asked of one at a time, moving to the next on failure. Default
// 127.0.0.1:9876, or the comma/semicolon-separated NAMESRV_ADDR environment
// variable when set.
func WithNameServers(addrs ...string) Opt {
	return opt(func(c *config) {
		var out []string
		for _, a := range addrs {
			out = append(out, splitAddrs(a)...)
		}
		c.nameServers = out
	})
}

// WithInstanceName sets the instance part of the client id (ip@instance).
// Default "DEFAULT", which the client replaces by the process id, as the
// RocketMQ clients do; give a transactional producer its own name.
func WithInstanceName(name string) MemberOpt {
	return memberOpt(func(c *config) { c.instanceName = name })
}

// WithLogger sets the logger; the client logs under the name "raftmq-client".
// Default: no logging.
func WithLogger(l hclog.Logger) Opt {
	return opt(func(c *config) {
		if l != nil {
			c.logger = l
		}
	})
}

// WithRequestTimeout bounds every request but a send (routes, heartbeats,
// one admin request; an earlier context deadline wins). Default 3 s.
func WithRequestTimeout(d time.Duration) Opt {
	return opt(func(c *config) { c.requestTimeout = d })
}

// WithDialTimeout bounds connecting to one address. Default 2 s.
func WithDialTimeout(d time.Duration) Opt {
	return opt(func(c *config) { c.dialTimeout = d })
}

// WithTLS makes the client dial every name server and broker with TLS,
// verifying them and presenting a certificate as cfg says (build one from
// PEM files with crypto/tls, or accept any server with
// InsecureSkipVerify for a test setup). An empty ServerName verifies the
// host of the address dialled, so certificates must name the addresses
// the name servers and the routes give. Default nil: plaintext.
func WithTLS(cfg *tls.Config) Opt {
	return opt(func(c *config) { c.tls = cfg })
}

// WithRouteRefreshInterval sets how often the routes of the topics in use
// are fetched again. Independently, a route is refreshed at once when a
// send fails over. Default 30 s.
func WithRouteRefreshInterval(d time.Duration) MemberOpt {
	return memberOpt(func(c *config) { c.routeRefresh = d })
}

// WithHeartbeatInterval sets how often the client sends HEART_BEAT to every
// broker address it knows. Default 30 s.
func WithHeartbeatInterval(d time.Duration) MemberOpt {
	return memberOpt(func(c *config) { c.heartbeat = d })
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
