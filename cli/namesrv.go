package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/namesrv"
)

func logLevelFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "log-level", Value: "info", Usage: "trace, debug, info, warn or error", EnvVars: []string{"RAFTMQ_LOG_LEVEL"}}
}

func newLogger(c *ucli.Context, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   name,
		Level:  hclog.LevelFromString(c.String("log-level")),
		Output: c.App.ErrWriter,
	})
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// namesrvConfig builds a namesrv.Config from the flags.
func namesrvConfig(c *ucli.Context) namesrv.Config {
	cfg := namesrv.DefaultConfig()
	cfg.Addr = c.String("listen")
	cfg.BrokerTimeout = c.Duration("broker-timeout")
	cfg.ScanInterval = c.Duration("scan-interval")
	cfg.Remoting.Limits = limitsFromFlags(c)
	cfg.Logger = newLogger(c, "raftmq")
	return cfg
}

func namesrvCommand() *ucli.Command {
	def := namesrv.DefaultConfig()
	return &ucli.Command{
		Name:  "namesrv",
		Usage: "run a name server",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "listen", Value: def.Addr, Usage: "listen address", EnvVars: []string{"RAFTMQ_NAMESRV_LISTEN"}},
			&ucli.DurationFlag{Name: "broker-timeout", Value: def.BrokerTimeout, Usage: "evict brokers silent for this long"},
			&ucli.DurationFlag{Name: "scan-interval", Value: def.ScanInterval, Usage: "how often to look for silent brokers"},
			logLevelFlag(),
		}, append(limitFlags(), serverTLSFlags()...)...),
		Action: func(c *ucli.Context) error {
			cfg := namesrvConfig(c)
			tc, err := serverTLS(c, cfg.Logger, c.Bool("tls-client-auth"))
			if err != nil {
				return err
			}
			cfg.Remoting.TLS = tc
			s, err := namesrv.New(cfg)
			if err != nil {
				return err
			}
			return serveUntilSignal(c.Context, s.ListenAndServe, s.Shutdown)
		},
	}
}
