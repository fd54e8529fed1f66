package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/namesrv"
	"github.com/raftmq/raftmq/remoting"
)

var limitArgs = []string{"--max-conns-per-ip", "5", "--max-conns", "50", "--max-request-rate", "12.5",
	"--max-request-burst", "7", "--max-rate-refusals", "9", "--rate-refusal-window", "3s",
	"--max-header-size", "4096", "--idle-timeout", "45s"}

var limitWant = remoting.Limits{MaxConnsPerIP: 5, MaxConns: 50, MaxRequestRate: 12.5, MaxRequestBurst: 7,
	MaxRateRefusals: 9, RateRefusalWindow: 3 * time.Second, MaxHeaderSize: 4096, IdleTimeout: 45 * time.Second}

// TestBrokerFlagsLimits: without flags the broker's listener keeps
// remoting's default limits; every limit flag, and a config-file key, reach
// broker.Config.Remoting.Limits.
func TestBrokerFlagsLimits(t *testing.T) {
	if got := parseBrokerConfig(t).Remoting.Limits; got != remoting.DefaultLimits() {
		t.Fatalf("defaults not kept: %+v", got)
	}
	if got := parseBrokerConfig(t, limitArgs...).Remoting.Limits; got != limitWant {
		t.Fatalf("flags not applied: got %+v, want %+v", got, limitWant)
	}
	file := filepath.Join(t.TempDir(), "broker.conf")
	if err := os.WriteFile(file, []byte("max-conns-per-ip = 3\nidle-timeout = 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := parseBrokerConfig(t, "--config", file).Remoting.Limits
	if got.MaxConnsPerIP != 3 || got.IdleTimeout != 0 || got.MaxConns != remoting.DefaultLimits().MaxConns {
		t.Fatalf("config file not applied: %+v", got)
	}
}

func parseNamesrvConfig(t *testing.T, args ...string) namesrv.Config {
	t.Helper()
	var cfg namesrv.Config
	cmd := namesrvCommand()
	app := &ucli.App{Flags: cmd.Flags, Action: func(c *ucli.Context) error {
		cfg = namesrvConfig(c)
		return cfg.Validate()
	}}
	if err := app.Run(append([]string{"namesrv"}, args...)); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestNamesrvFlagsLimits: the same for the name server.
func TestNamesrvFlagsLimits(t *testing.T) {
	if got := parseNamesrvConfig(t).Remoting.Limits; got != remoting.DefaultLimits() {
		t.Fatalf("defaults not kept: %+v", got)
	}
	if got := parseNamesrvConfig(t, limitArgs...).Remoting.Limits; got != limitWant {
		t.Fatalf("flags not applied: got %+v, want %+v", got, limitWant)
	}
}

// TestLimitFlagsValidated: a bad limit is an error before anything starts.
func TestLimitFlagsValidated(t *testing.T) {
	app := &ucli.App{Flags: brokerFlags(), Action: func(c *ucli.Context) error {
		_, err := brokerConfig(c)
		return err
	}}
	err := app.Run([]string{"broker", "--node-id", "n1", "--peers", "n1/127.0.0.1:1/127.0.0.1:2", "--data", t.TempDir(), "--max-header-size", "10"})
	if err == nil || !strings.Contains(err.Error(), "MaxHeaderSize") {
		t.Fatalf("broker with --max-header-size 10: %v; want a MaxHeaderSize error", err)
	}
}
