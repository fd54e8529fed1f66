package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wallclock"
)

func brokerFlags() []ucli.Flag {
	def, raftDef := broker.DefaultConfig(), dledger.DefaultConfig()
	flags := []ucli.Flag{
		&ucli.StringFlag{Name: "config", Usage: "a key=value file whose keys are these flags' names (flags given on the command line win)"},
		&ucli.StringFlag{Name: "cluster", Value: def.Cluster, Usage: "cluster name"},
		&ucli.StringFlag{Name: "broker-name", Value: def.BrokerName, Usage: "broker group name (the same on every node of the group)"},
		&ucli.StringFlag{Name: "node-id", Usage: "this node's ID in --peers"},
		&ucli.StringFlag{Name: "peers", Usage: "the group's nodes, comma-separated id/raftHost:port/remotingHost:port"},
		&ucli.StringFlag{Name: "listen", Value: def.ListenAddr, Usage: "client-facing listen address"},
		&ucli.StringFlag{Name: "http", Usage: "serve /healthz, /metrics and /debug/pprof/ on this address (conventionally :10980; default off)"},
		&ucli.StringFlag{Name: "raft-listen", Usage: "raft bind address (default: this node's raft address in --peers)"},
		&ucli.StringFlag{Name: "data", Usage: "data directory"},
		&ucli.StringFlag{Name: "namesrv", Usage: "name servers, ';' or ',' separated host:port"},
		&ucli.StringFlag{Name: "flush", Value: "SYNC_FLUSH", Usage: "SYNC_FLUSH (fsync before acknowledging) or ASYNC_FLUSH (loses acknowledged messages if a majority loses power)"},
		&ucli.BoolFlag{Name: "join", Usage: "this node is new to an existing group: wait to be added (raftmq cluster add-voter) instead of bootstrapping"},
		&ucli.BoolFlag{Name: "auto-create-topic", Usage: "create unknown topics on first send (through TBW102)"},
		&ucli.Int64Flag{Name: "segment-size", Value: def.Store.CommitLog.SegmentSize, Usage: "commitlog segment size in bytes"},
		&ucli.Int64Flag{Name: "min-free-bytes", Value: def.Store.CommitLog.Retention.MinFreeBytes, Usage: "refuse writes (SERVICE_NOT_AVAILABLE, \"disk full\") while fewer bytes are free on the data disk; 0 turns the margin off"},
		&ucli.IntFlag{Name: "max-message-size", Value: def.MaxMessageSize, Usage: "largest accepted message body in bytes"},
		&ucli.IntFlag{Name: "raft-max-inflight", Value: raftDef.MaxInflight, Usage: "raft entries the leader keeps proposed but not yet committed; sends arriving meanwhile share the next entry"},
		&ucli.BoolFlag{Name: "serial-leader-write", Usage: "the leader fsyncs an entry before replicating it, instead of in parallel (slower; for comparison)"},
		&ucli.BoolFlag{Name: "no-early-ack", Usage: "answer a send only once the leader applied it, not as soon as it is durable on a majority (slower; for comparison)"},
		&ucli.DurationFlag{Name: "transaction-timeout", Value: def.TransactionTimeout, Usage: "age at which an undecided transaction half message is first checked back (transactionTimeOut)"},
		&ucli.DurationFlag{Name: "transaction-check-interval", Value: def.TransactionCheckInterval, Usage: "how often undecided half messages are checked back (transactionCheckInterval)"},
		&ucli.IntFlag{Name: "transaction-check-max", Value: def.TransactionCheckMax, Usage: "check-backs before an undecided half message is discarded to TRANS_CHECK_MAX_TIME_TOPIC (transactionCheckMax)"},
		&ucli.BoolFlag{Name: "enable-property-filter", Value: def.EnablePropertyFilter, Usage: "evaluate SQL92 subscriptions on the broker (enablePropertyFilter); false refuses them"},
		&ucli.BoolFlag{Name: "store-reply-message", Value: def.StoreReplyMessage, Usage: "also store request-reply replies in <cluster>_REPLY_TOPIC (storeReplyMessageEnable)"},
		&ucli.BoolFlag{Name: "trace-topic-enable", Value: def.TraceTopicEnable, Usage: "create RMQ_SYS_TRACE_TOPIC for the clients' message trace (traceTopicEnable)"},
		&ucli.StringFlag{Name: "acl", Usage: "seed the group's ACL from this plain_acl.yml (RocketMQ's format) if the group has none yet; change it later with raftmq acl"},
		&ucli.DurationFlag{Name: "dedupe-window", Value: def.DedupeWindow, Usage: "a send whose unique keys (UNIQ_KEY) were stored this recently is answered with the first send's result and stored once; 0 turns it off"},
		&ucli.BoolFlag{Name: "slave-read-enable", Value: def.SlaveReadEnable, Usage: "answer the pulls of a consumer far behind with a follower's brokerId in suggestWhichBrokerId, so cold backlogs are read from followers (slaveReadEnable; RocketMQ's default is false)"},
		&ucli.IntFlag{Name: "access-message-in-memory-max-ratio", Value: def.AccessMessageInMemoryMaxRatio, Usage: "a consumer is far behind when more commitlog bytes than this percentage of physical memory (its cgroup limit when lower) lie after what it pulled (accessMessageInMemoryMaxRatio)"},
		&ucli.Int64Flag{Name: "access-message-in-memory-max-bytes", Value: def.AccessMessageInMemoryMaxBytes, Usage: "that threshold in bytes instead of the ratio; 0 uses the ratio"},
		logLevelFlag(),
		&ucli.StringFlag{Name: "fault-clock-file", Hidden: true, Usage: "fault injection (the chaos suite): step this process's wall clock by the milliseconds this file holds, read every 50 ms"},
	}
	flags = append(flags, limitFlags()...)
	return append(flags, brokerTLSFlags()...)
}

// applyConfigFile sets every flag named in the file that was not given on
// the command line.
func applyConfigFile(c *ucli.Context) error {
	path := c.String("config")
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		k, v, ok := strings.Cut(text, "=")
		if !ok {
			return fmt.Errorf("%s:%d: want key=value", path, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if c.IsSet(k) {
			continue
		}
		if err := c.Set(k, v); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", path, line, k, err)
		}
	}
	return sc.Err()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseFlushMode(s string) (commitlog.FlushMode, error) {
	switch strings.ToUpper(s) {
	case "SYNC_FLUSH", "SYNC":
		return commitlog.SyncFlush, nil
	case "ASYNC_FLUSH", "ASYNC":
		return commitlog.AsyncFlush, nil
	}
	return 0, fmt.Errorf("flush mode %q: want SYNC_FLUSH or ASYNC_FLUSH", s)
}

// brokerConfig builds a broker.Config from the flags.
func brokerConfig(c *ucli.Context) (broker.Config, error) {
	cfg := broker.DefaultConfig()
	if err := applyConfigFile(c); err != nil {
		return cfg, err
	}
	cfg.Cluster, cfg.BrokerName = c.String("cluster"), c.String("broker-name")
	cfg.NodeID, cfg.ListenAddr = c.String("node-id"), c.String("listen")
	cfg.RaftListen, cfg.DataDir = c.String("raft-listen"), c.String("data")
	cfg.HTTPAddr = c.String("http")
	cfg.NameServers = splitList(c.String("namesrv"))
	cfg.AutoCreateTopic = c.Bool("auto-create-topic")
	cfg.Join = c.Bool("join")
	cfg.Store.CommitLog.SegmentSize, cfg.MaxMessageSize = c.Int64("segment-size"), c.Int("max-message-size")
	cfg.Store.CommitLog.Retention.MinFreeBytes = c.Int64("min-free-bytes")
	cfg.TransactionTimeout, cfg.TransactionCheckInterval = c.Duration("transaction-timeout"), c.Duration("transaction-check-interval")
	cfg.TransactionCheckMax = c.Int("transaction-check-max")
	cfg.DedupeWindow = c.Duration("dedupe-window")
	cfg.EnablePropertyFilter, cfg.StoreReplyMessage = c.Bool("enable-property-filter"), c.Bool("store-reply-message")
	cfg.TraceTopicEnable = c.Bool("trace-topic-enable")
	cfg.SlaveReadEnable = c.Bool("slave-read-enable")
	cfg.AccessMessageInMemoryMaxRatio = c.Int("access-message-in-memory-max-ratio")
	cfg.AccessMessageInMemoryMaxBytes = c.Int64("access-message-in-memory-max-bytes")
	seed, err := aclSeed(c)
	if err != nil {
		return cfg, err
	}
	cfg.ACL = seed
	cfg.Remoting.Limits = limitsFromFlags(c)
	rc := dledger.DefaultConfig()
	rc.MaxInflight, rc.SerialLeaderWrite = c.Int("raft-max-inflight"), c.Bool("serial-leader-write")
	rc.NoEarlyAck = c.Bool("no-early-ack")
	cfg.Raft = &rc
	for _, s := range splitList(c.String("peers")) {
		p, err := broker.ParsePeer(s)
		if err != nil {
			return cfg, err
		}
		cfg.Peers = append(cfg.Peers, p)
	}
	mode, err := parseFlushMode(c.String("flush"))
	if err != nil {
		return cfg, err
	}
	cfg.Store.CommitLog.FlushMode = mode
	cfg.Logger = newLogger(c, "raftmq")
	if err := applyBrokerTLS(c, &cfg, &rc); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func brokerCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "broker",
		Usage: "run one node of a broker group",
		Description: "Example, node n1 of a three-node group:\n" +
			"   raftmq broker --node-id n1 --data /var/lib/raftmq \\\n" +
			"     --peers n1/10.0.0.1:40911/10.0.0.1:10911,n2/10.0.0.2:40911/10.0.0.2:10911,n3/10.0.0.3:40911/10.0.0.3:10911 \\\n" +
			"     --namesrv 10.0.0.9:9876",
		Flags: brokerFlags(),
		Action: func(c *ucli.Context) error {
			cfg, err := brokerConfig(c)
			if err != nil {
				return err
			}
			b, err := broker.New(cfg)
			if err != nil {
				return err
			}
			if path := c.String("fault-clock-file"); path != "" {
				stop := watchFaultClock(c.Context, path, cfg.Logger)
				defer stop()
			}
			return serveUntilSignal(c.Context, b.ListenAndServe, b.Shutdown)
		},
	}
}

// watchFaultClock steps the wall clock from path (--fault-clock-file)
// until the returned stop is called.
func watchFaultClock(parent context.Context, path string, log hclog.Logger) (stop func()) {
	log.Warn("fault injection: the wall clock follows a file", "path", path)
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wallclock.WatchFile(ctx, path, func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) })
	}()
	return func() { cancel(); <-done }
}

// serveUntilSignal runs serve until it fails or SIGINT/SIGTERM arrives,
// then shuts down gracefully.
func serveUntilSignal(parent context.Context, serve func() error, shutdown func(context.Context) error) error {
	ctx, stop := signalContext(parent)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	select {
	case err := <-errc:
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = shutdown(sctx)
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	<-errc
	return nil
}
