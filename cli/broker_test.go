package cli

import (
	"testing"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/broker"
)

// parseBrokerConfig runs the broker flags over args and returns the config
// brokerConfig builds from them.
func parseBrokerConfig(t *testing.T, args ...string) broker.Config {
	t.Helper()
	var cfg broker.Config
	app := &ucli.App{Flags: brokerFlags(), Action: func(c *ucli.Context) error {
		var err error
		cfg, err = brokerConfig(c)
		return err
	}}
	base := []string{"broker", "--node-id", "n1", "--peers", "n1/127.0.0.1:1/127.0.0.1:2", "--data", t.TempDir()}
	if err := app.Run(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestBrokerFlagsMessagingFeatures(t *testing.T) {
	def := broker.DefaultConfig()
	cfg := parseBrokerConfig(t)
	if cfg.DedupeWindow != def.DedupeWindow || !cfg.EnablePropertyFilter || !cfg.StoreReplyMessage || !cfg.TraceTopicEnable ||
		cfg.TransactionTimeout != def.TransactionTimeout || cfg.TransactionCheckMax != def.TransactionCheckMax {
		t.Fatalf("defaults not kept: %+v", cfg)
	}
	cfg = parseBrokerConfig(t, "--dedupe-window", "0", "--enable-property-filter=false", "--store-reply-message=false",
		"--trace-topic-enable=false", "--transaction-timeout", "2s", "--transaction-check-interval", "3s", "--transaction-check-max", "4")
	if cfg.DedupeWindow != 0 || cfg.EnablePropertyFilter || cfg.StoreReplyMessage || cfg.TraceTopicEnable ||
		cfg.TransactionTimeout != 2*time.Second || cfg.TransactionCheckInterval != 3*time.Second || cfg.TransactionCheckMax != 4 {
		t.Fatalf("flags not applied: %+v", cfg)
	}
}

func TestBrokerFlagsFollowerReads(t *testing.T) {
	cfg := parseBrokerConfig(t)
	if !cfg.SlaveReadEnable || cfg.AccessMessageInMemoryMaxRatio != 40 || cfg.AccessMessageInMemoryMaxBytes != 0 {
		t.Fatalf("defaults: slaveReadEnable %v, ratio %d, bytes %d", cfg.SlaveReadEnable, cfg.AccessMessageInMemoryMaxRatio, cfg.AccessMessageInMemoryMaxBytes)
	}
	cfg = parseBrokerConfig(t, "--slave-read-enable=false", "--access-message-in-memory-max-ratio", "25", "--access-message-in-memory-max-bytes", "65536")
	if cfg.SlaveReadEnable || cfg.AccessMessageInMemoryMaxRatio != 25 || cfg.AccessMessageInMemoryMaxBytes != 65536 {
		t.Fatalf("flags not applied: slaveReadEnable %v, ratio %d, bytes %d", cfg.SlaveReadEnable, cfg.AccessMessageInMemoryMaxRatio, cfg.AccessMessageInMemoryMaxBytes)
	}
}
