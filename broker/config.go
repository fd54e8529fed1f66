package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

// Peer is one node of the broker group: its raft identity and the two
// addresses other nodes and clients reach it on.
type Peer struct {
	ID           string
	RaftAddr     string
	RemotingAddr string
}

// ParsePeer parses "id/raftHost:port/remotingHost:port".
func ParsePeer(s string) (Peer, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] == "" {
		return Peer{}, fmt.Errorf("broker: peer %q: want id/raftAddr/remotingAddr", s)
	}
	for _, a := range parts[1:] {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return Peer{}, fmt.Errorf("broker: peer %q: %w", s, err)
		}
	}
	return Peer{ID: parts[0], RaftAddr: parts[1], RemotingAddr: parts[2]}, nil
}

// String formats p as ParsePeer reads it.
func (p Peer) String() string { return p.ID + "/" + p.RaftAddr + "/" + p.RemotingAddr }

// Config configures one broker node. Start from DefaultConfig.
type Config struct {
	// Cluster and BrokerName name the cluster and this node's group; every
	// node of a group has the same BrokerName.
	Cluster    string
	BrokerName string
	// NodeID is this node's ID in Peers.
	NodeID string
	// Peers lists every node of the group, this one included.
	Peers []Peer
	// Join starts a node that is not in the group yet: it does not
	// bootstrap from Peers but waits to be added (raftmq cluster add-voter)
	// and catches up by snapshot and log. Ignored once it has raft state.
	Join bool
	// ListenAddr is the remoting listen address (default ":10911"); the
	// advertised address is this node's RemotingAddr in Peers.
	ListenAddr string
	// HTTPAddr, when set, serves /healthz, /metrics (Prometheus text) and
	// /debug/pprof/ on this address (conventionally :10980); empty: off.
	HTTPAddr string
	// RaftListen is the raft bind address; empty means this node's RaftAddr.
	RaftListen string
	// DataDir holds raft state (raft/) and the message store (commitlog/,
	// consumequeue/, index/).
	DataDir string
	// NameServers are the name servers to register with ("host:port").
	NameServers []string
	// RegisterInterval is how often to re-register (RocketMQ: 30 s).
	RegisterInterval time.Duration

	// Store configures the message store: Store.CommitLog.FlushMode
	// (SYNC_FLUSH by default) and SegmentSize (1 GiB), retention, the
	// index geometry. Store.Dir defaults to DataDir.
	Store store.Config

	// AutoCreateTopic creates unknown topics on first send through the
	// default topic TBW102, as RocketMQ's autoCreateTopicEnable.
	AutoCreateTopic bool
	// DefaultQueueNums is the queue count of auto-created topics (4),
	// capped by what the producer asks for.
	DefaultQueueNums int32
	// MaxMessageSize bounds a message body (4 MiB).
	MaxMessageSize int
	// LongPollingEnabled holds pulls that find nothing (default true).
	LongPollingEnabled bool
	// EnablePropertyFilter evaluates SQL92 subscriptions on the broker
	// (RocketMQ's enablePropertyFilter; default true). Off, an SQL92
	// subscription's pulls are refused.
	EnablePropertyFilter bool
	// StoreReplyMessage also stores request-reply replies in the reply
	// topic after pushing them (RocketMQ's storeReplyMessageEnable;
	// default true).
	StoreReplyMessage bool
	// TraceTopicEnable creates RMQ_SYS_TRACE_TOPIC for the clients'
	// message trace (RocketMQ's traceTopicEnable, which defaults to false
	// there; true here, so a client's trace hook works out of the box).
	TraceTopicEnable bool
	// DedupeWindow is how long a message's unique key is remembered: a
	// send whose keys are already stored in its topic within the window is
	// answered with the first send's result and stored once (raftmq
	// extension, dedupe.go; default 2 min, 0 turns it off).
	DedupeWindow time.Duration
	// ACL seeds the group's ACL (a plain_acl.yml, acl.LoadFile) when the
	// group has none yet; nil: this node brings none (it still enforces a
	// seed another node applied). See acl_service.go.
	ACL *protocol.ACLConfig
	// SlaveReadEnable lets pulls of a consumer far behind be answered with
	// a follower's brokerId in suggestWhichBrokerId (RocketMQ's
	// slaveReadEnable; see follower_read.go). Default true, unlike
	// RocketMQ's false: a RocketMQ slave may lack what its master
	// acknowledged, whereas a raftmq follower serves only what the group
	// committed, with the same offsets as the leader.
	SlaveReadEnable bool
	// AccessMessageInMemoryMaxRatio is the percentage of the machine's
	// physical memory (its cgroup limit when lower) beyond which a
	// consumer counts as far behind: more commitlog bytes after what it
	// read than that (RocketMQ's accessMessageInMemoryMaxRatio, 40).
	AccessMessageInMemoryMaxRatio int
	// AccessMessageInMemoryMaxBytes, when positive, is that threshold in
	// bytes instead of the ratio (raftmq extension, for tests and for
	// hosts whose page cache serves more than the broker; 0: the ratio).
	AccessMessageInMemoryMaxBytes int64
	// ClientChannelExpiry drops clients silent for this long (120 s).
	ClientChannelExpiry time.Duration
	// ForwardTimeout bounds a write forwarded to the leader (3 s).
	ForwardTimeout time.Duration

	// MessageDelayLevel lists the delay of each DELAY level, as RocketMQ's
	// messageDelayLevel: space-separated durations with unit ms, s, m, h or
	// d (default "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h
	// 2h"). Level n waits the n-th duration; retries use level 3+n.
	MessageDelayLevel string
	// LockExpiry is how long an orderly consumer's queue lock lives
	// without renewal (RocketMQ's rocketmq.broker.rebalance.lockMaxLiveTime,
	// 60 s).
	LockExpiry time.Duration

	// TransactionTimeout is how old an undecided half message must be
	// before it is checked back (RocketMQ's transactionTimeOut, 6 s); a
	// message's CHECK_IMMUNITY_TIME_IN_SECONDS overrides it for its first
	// check.
	TransactionTimeout time.Duration
	// TransactionCheckInterval is how often undecided half messages are
	// checked back (RocketMQ's transactionCheckInterval, 30 s).
	TransactionCheckInterval time.Duration
	// TransactionCheckMax is how many check-backs a half message gets
	// before it is discarded to TRANS_CHECK_MAX_TIME_TOPIC (15).
	TransactionCheckMax int

	// Raft tunes the group; nil means dledger.DefaultConfig()'s timeouts.
	Raft *dledger.Config
	// Remoting configures the client-facing listener; Remoting.TLS puts
	// it on TLS.
	Remoting remoting.ServerConfig
	// ClientTLS, if set, is the TLS of the node's own remoting client: to
	// the name servers and to the leader it forwards writes to. With
	// mutual TLS on those ports it must present a certificate. Nil dials
	// plaintext.
	ClientTLS *tls.Config
	// HTTPTLS, if set, serves HTTPAddr over HTTPS.
	HTTPTLS *tls.Config
	// Logger is the base logger; nil discards.
	Logger hclog.Logger
}

// DefaultConfig returns RocketMQ-like defaults. NodeID, Peers and DataDir
// must still be set.
func DefaultConfig() Config {
	return Config{
		Cluster:              "DefaultCluster",
		BrokerName:           "broker-a",
		ListenAddr:           ":10911",
		RegisterInterval:     30 * time.Second,
		Store:                store.DefaultConfig(),
		AutoCreateTopic:      false,
		DefaultQueueNums:     4,
		MaxMessageSize:       4 << 20,
		LongPollingEnabled:   true,
		EnablePropertyFilter: true,
		StoreReplyMessage:    true,
		TraceTopicEnable:     true,
		DedupeWindow:         2 * time.Minute,
		SlaveReadEnable:      true,
		ClientChannelExpiry:  120 * time.Second,
		ForwardTimeout:       3 * time.Second,
		MessageDelayLevel:    DefaultMessageDelayLevel,
		LockExpiry:           60 * time.Second,

		AccessMessageInMemoryMaxRatio: 40,

		TransactionTimeout:       6 * time.Second,
		TransactionCheckInterval: 30 * time.Second,
		TransactionCheckMax:      15,
		Remoting:                 remoting.DefaultServerConfig(),
	}
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("broker: "+format, args...)) }
	if c.Cluster == "" {
		add("Cluster is empty")
	}
	if c.BrokerName == "" {
		add("BrokerName is empty")
	}
	if c.DataDir == "" {
		add("DataDir is empty")
	}
	if c.ListenAddr == "" {
		add("ListenAddr is empty")
	}
	if _, ok := c.self(); !ok {
		add("NodeID %q is not in Peers", c.NodeID)
	}
	seen := map[string]bool{}
	for _, p := range c.Peers {
		if seen[p.ID] {
			add("peer ID %q appears twice", p.ID)
		}
		seen[p.ID] = true
	}
	if c.RegisterInterval <= 0 {
		add("RegisterInterval %v must be positive", c.RegisterInterval)
	}
	if c.DefaultQueueNums <= 0 || c.DefaultQueueNums > 1024 {
		add("DefaultQueueNums %d out of range 1..1024", c.DefaultQueueNums)
	}
	if c.MaxMessageSize <= 0 {
		add("MaxMessageSize %d must be positive", c.MaxMessageSize)
	}
	if c.ClientChannelExpiry <= 0 || c.ForwardTimeout <= 0 {
		add("ClientChannelExpiry and ForwardTimeout must be positive")
	}
	if _, err := ParseDelayLevels(c.MessageDelayLevel); err != nil {
		errs = append(errs, err)
	}
	if c.LockExpiry <= 0 {
		add("LockExpiry %v must be positive", c.LockExpiry)
	}
	if c.AccessMessageInMemoryMaxRatio < 0 || c.AccessMessageInMemoryMaxRatio > 100 {
		add("AccessMessageInMemoryMaxRatio %d out of range 0..100", c.AccessMessageInMemoryMaxRatio)
	}
	if c.AccessMessageInMemoryMaxBytes < 0 {
		add("AccessMessageInMemoryMaxBytes %d must not be negative (0: use the ratio)", c.AccessMessageInMemoryMaxBytes)
	}
	if c.DedupeWindow < 0 {
		add("DedupeWindow %v must not be negative (0 turns it off)", c.DedupeWindow)
	}
	if c.TransactionTimeout <= 0 || c.TransactionCheckInterval <= 0 || c.TransactionCheckMax <= 0 {
		add("TransactionTimeout %v, TransactionCheckInterval %v and TransactionCheckMax %d must be positive",
			c.TransactionTimeout, c.TransactionCheckInterval, c.TransactionCheckMax)
	}
	if err := c.Remoting.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.storeConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// storeConfig is Store with its defaults from the broker's: Dir from
// DataDir, the broker's logger.
func (c Config) storeConfig() store.Config {
	sc := c.Store
	if sc.Dir == "" {
		sc.Dir = c.DataDir
	}
	if sc.Logger == nil {
		sc.Logger = c.Logger
	}
	return sc
}

// self is this node's entry in Peers.
func (c Config) self() (Peer, bool) {
	for _, p := range c.Peers {
		if p.ID == c.NodeID {
			return p, true
		}
	}
	return Peer{}, false
}
