package dledger

import (
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Peer is one voting member of the group.
type Peer struct {
	ID   string
	Addr string
}

// Config configures a Node. Start from DefaultConfig.
type Config struct {
	// NodeID is this node's raft server ID, unique in the group.
	NodeID string
	// RaftAddr is the address the raft TCP transport binds (host:port).
	RaftAddr string
	// Advertise is the address other nodes dial; empty means the bound
	// address, which must then be a concrete IP.
	Advertise string
	// Peers is the static membership used to bootstrap a brand-new group,
	// this node included. Empty means join: wait to be added by AddVoter.
	// Ignored once the node has raft state on disk.
	Peers []Peer
	// DataDir holds raft's stable store (raft-boltdb: term and vote) and
	// snapshots.
	DataDir string

	// LogStore is the raft log, required: the message store's commitlog
	// (opened with SpanFunc) in a broker, raft's InmemStore in some
	// tests. The node owns it only for the raft traffic: whoever opened it
	// closes it, after the node. Optional capabilities are found by type
	// assertion: a DeferredSyncLog lets the leader fsync its copy in
	// parallel with replicating it, a FlooredLog is told the last
	// snapshot index so its retention never removes what raft replays.
	LogStore raft.LogStore
	// StableStore overrides the raft-boltdb store in DataDir (tests).
	StableStore raft.StableStore
	// SnapshotStore overrides the file snapshot store in DataDir (tests).
	SnapshotStore raft.SnapshotStore
	// Transport overrides the TCP transport (tests use raft's in-memory
	// transport to cut links). The node closes it on Close if it is a
	// raft.WithClose.
	Transport raft.Transport
	// TLSServer and TLSClient, both or neither, put the raft transport
	// over TLS (tls.go): TLSServer for the connections peers open to this
	// node (require and verify a client certificate for mutual TLS),
	// TLSClient for the ones this node opens (its certificate, and the CA
	// the peers' certificates must chain to; they are verified against
	// the host of their raft address). Ignored with Transport.
	TLSServer, TLSClient *tls.Config

	// Dispatcher receives the messages of every applied put entry (the
	// message store's consumequeue and index); nil drops them.
	Dispatcher Dispatcher
	// StateMachine applies every other command (the broker group's
	// metadata) and is snapshotted with the node; nil allows puts only.
	StateMachine StateMachine
	// OnLeaderChange, if set, is called on a single goroutine, in order,
	// whenever this node observes a new leader (or the loss of one).
	OnLeaderChange func(LeaderEvent)

	// HeartbeatTimeout: a follower that hears nothing for a random time in
	// [HeartbeatTimeout, 2×HeartbeatTimeout) starts an election. Default
	// 300ms: a kill -9 of the leader costs an SDK producer 0.47–0.89 s of
	// delayed sends on loopback (10 runs; 500ms gave 0.77–2.0 s), and a
	// full make bench load on two cores triggers no election (leader
	// heartbeats take raft's fast path, beside fsyncs and appends).
	HeartbeatTimeout time.Duration
	// ElectionTimeout bounds a candidate's wait for votes. Default 300ms
	// (a split vote costs one more such round).
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout: a leader that cannot reach a quorum this long
	// steps down, so a partitioned leader stops accepting writes quickly.
	// Must not exceed HeartbeatTimeout. Default 250ms.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is how long raft waits before sending an empty append
	// to propagate the commit index. Default 5ms: followers learn commits
	// quickly, which matters for follower reads.
	CommitTimeout time.Duration
	// MaxAppendEntries caps entries per AppendEntries RPC and per raft
	// dispatch batch. Default 64; entries are already group commits.
	MaxAppendEntries int
	// SnapshotInterval and SnapshotThreshold: how often raft checks, and how
	// many new entries it needs, to take a snapshot. Defaults 30s / 8192.
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64
	// TrailingLogs is how many entries raft keeps after a snapshot. The
	// commitlog ignores head deletion (retention decides), so this mainly
	// matters for other log stores. Default 10240; 0 is refused: raft's
	// compaction would then ask the log store to delete the whole log.
	TrailingLogs uint64
	// SnapshotRetain is how many snapshots to keep on disk. Default 2.
	SnapshotRetain int

	// SerialLeaderWrite makes the leader fsync an entry before it sends it
	// to the followers (hashicorp/raft's own order) instead of in parallel
	// with replicating it (leaderwrite.go). Either way an entry is applied
	// only once a majority, the leader included, fsynced it, and answered
	// only once a majority fsynced it. Default false; it only applies to a
	// DeferredSyncLog.
	SerialLeaderWrite bool
	// NoEarlyAck answers every proposal only once this node applied its
	// entry, as hashicorp/raft does, instead of answering puts that ask
	// for it (PutMessagesCommand.EarlyAck) as soon as the entry is durable
	// on a majority (earlyack.go). Default false.
	NoEarlyAck bool

	// MaxBatchMessages and MaxBatchBytes bound one coalesced entry.
	// Defaults 4096 messages / 4 MiB.
	MaxBatchMessages int
	MaxBatchBytes    int
	// MaxInflight is how many entries the leader keeps proposed but not
	// yet committed; callers arriving meanwhile are coalesced. Default 4.
	MaxInflight int
	// PipelineMinMessages and PipelineMinBytes: while entries are in
	// flight, another is proposed only once it holds this many messages
	// or bytes; a smaller one waits for them to complete and collects
	// what arrives meanwhile. Every entry costs an fsync on every node,
	// so many small entries in flight are slower than fewer full ones.
	// Defaults 256 messages / 256 KiB.
	PipelineMinMessages int
	PipelineMinBytes    int
	// Linger bounds how long an entry, with none in flight, waits for the
	// callers the previous entry answered to send again (synchronous
	// senders do so at once); it waits only while fewer proposals are
	// queued than were expected, and never longer than half the last
	// round took. 0 disables it. Default 2ms.
	Linger time.Duration

	// Logger is the base logger; the node logs as Named("dledger") and
	// hands the same logger to raft. Default: hclog at Info to stderr.
	Logger hclog.Logger
}

// DefaultConfig returns a Config with every tunable set to its default.
// NodeID, RaftAddr, DataDir, LogStore, Dispatcher and StateMachine must
// still be set.
func DefaultConfig() Config {
	return Config{
		HeartbeatTimeout:    300 * time.Millisecond,
		ElectionTimeout:     300 * time.Millisecond,
		LeaderLeaseTimeout:  250 * time.Millisecond,
		CommitTimeout:       5 * time.Millisecond,
		MaxAppendEntries:    64,
		SnapshotInterval:    30 * time.Second,
		SnapshotThreshold:   8192,
		TrailingLogs:        10240,
		SnapshotRetain:      2,
		MaxBatchMessages:    4096,
		MaxBatchBytes:       4 << 20,
		MaxInflight:         4,
		PipelineMinMessages: 256,
		PipelineMinBytes:    256 << 10,
		Linger:              2 * time.Millisecond,
	}
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.NodeID == "" {
		bad("NodeID is empty")
	}
	if c.Transport == nil {
		if _, _, err := net.SplitHostPort(c.RaftAddr); err != nil {
			bad("RaftAddr %q: %v", c.RaftAddr, err)
		}
	}
	if (c.TLSServer == nil) != (c.TLSClient == nil) {
		bad("TLSServer and TLSClient must be set together")
	}
	if c.DataDir == "" && (c.StableStore == nil || c.SnapshotStore == nil) {
		bad("DataDir is empty")
	}
	if c.LogStore == nil {
		bad("LogStore is nil")
	}
	if c.Linger < 0 {
		bad("Linger %v is negative", c.Linger)
	}
	if c.TrailingLogs == 0 {
		bad("TrailingLogs is 0: raft would delete the whole log at each snapshot")
	}
	errs = append(errs, c.validatePeers()...)
	errs = append(errs, c.validateTunables()...)
	if err := raft.ValidateConfig(c.raftConfig()); err != nil {
		bad("raft: %v", err)
	}
	return errors.Join(errs...)
}

func (c *Config) validatePeers() []error {
	var errs []error
	if len(c.Peers) == 0 {
		return nil
	}
	ids, addrs, self := map[string]bool{}, map[string]bool{}, false
	for _, p := range c.Peers {
		if p.ID == "" || p.Addr == "" {
			errs = append(errs, fmt.Errorf("%w: peer %+v has an empty ID or Addr", ErrInvalidConfig, p))
		}
		if ids[p.ID] || addrs[p.Addr] {
			errs = append(errs, fmt.Errorf("%w: peer %+v is listed twice", ErrInvalidConfig, p))
		}
		ids[p.ID], addrs[p.Addr] = true, true
		self = self || p.ID == c.NodeID
	}
	if !self {
		errs = append(errs, fmt.Errorf("%w: Peers does not include NodeID %q", ErrInvalidConfig, c.NodeID))
	}
	return errs
}

func (c *Config) validateTunables() []error {
	var errs []error
	pos := map[string]int{
		"MaxBatchMessages": c.MaxBatchMessages, "MaxBatchBytes": c.MaxBatchBytes,
		"MaxInflight": c.MaxInflight, "MaxAppendEntries": c.MaxAppendEntries, "SnapshotRetain": c.SnapshotRetain,
		"PipelineMinMessages": c.PipelineMinMessages, "PipelineMinBytes": c.PipelineMinBytes,
	}
	for _, name := range slices.Sorted(maps.Keys(pos)) {
		if pos[name] <= 0 {
			errs = append(errs, fmt.Errorf("%w: %s must be positive, is %d", ErrInvalidConfig, name, pos[name]))
		}
	}
	return errs
}

// raftConfig translates c into raft's configuration.
func (c *Config) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.NodeID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaderLeaseTimeout
	rc.CommitTimeout = c.CommitTimeout
	rc.MaxAppendEntries = c.MaxAppendEntries
	// BatchApplyCh stays off: with a buffered applyCh, futures still in the
	// buffer when raft shuts down are never answered, which would hang the
	// proposer's waiter (and a caller) forever. It measured ~15% more
	// msgs/s (docs/BENCHMARKS.md); group commit already fills the entries.
	rc.BatchApplyCh = false
	rc.SnapshotInterval = c.SnapshotInterval
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.TrailingLogs = c.TrailingLogs
	rc.ShutdownOnRemove = true
	rc.Logger = c.Logger
	return rc
}
