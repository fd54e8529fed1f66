package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/remoting"
)

// limitFlags are the remoting listener's abuse limits, shared by the broker
// and the name server; docs/OPERATIONS.md "Connection limits" explains them.
func limitFlags() []ucli.Flag {
	def := remoting.DefaultLimits()
	return []ucli.Flag{
		&ucli.IntFlag{Name: "max-conns-per-ip", Value: def.MaxConnsPerIP, Usage: "connections open at once from one client IP; one more is answered SYSTEM_BUSY and closed; 0 = no limit"},
		&ucli.IntFlag{Name: "max-conns", Value: def.MaxConns, Usage: "connections open at once in total; 0 = no limit"},
		&ucli.Float64Flag{Name: "max-request-rate", Value: def.MaxRequestRate, Usage: "requests per second each connection may sustain; more are answered SYSTEM_BUSY; 0 = no limit"},
		&ucli.IntFlag{Name: "max-request-burst", Value: def.MaxRequestBurst, Usage: "requests a connection may send at once above --max-request-rate; 0 = one second's worth"},
		&ucli.IntFlag{Name: "max-rate-refusals", Value: def.MaxRateRefusals, Usage: "a connection refused for its rate more often than this within --rate-refusal-window is disconnected; 0 = never"},
		&ucli.DurationFlag{Name: "rate-refusal-window", Value: def.RateRefusalWindow, Usage: "the window --max-rate-refusals counts in"},
		&ucli.IntFlag{Name: "max-header-size", Value: def.MaxHeaderSize, Usage: "largest accepted frame header in bytes; a bigger one closes the connection; 0 = only the frame size limit"},
		&ucli.DurationFlag{Name: "idle-timeout", Value: def.IdleTimeout, Usage: "close a connection that sent nothing for this long and has no request in progress (clients heartbeat every 30 s); 0 = never"},
	}
}

// limitsFromFlags reads limitFlags.
func limitsFromFlags(c *ucli.Context) remoting.Limits {
	return remoting.Limits{
		MaxConnsPerIP:     c.Int("max-conns-per-ip"),
		MaxConns:          c.Int("max-conns"),
		MaxRequestRate:    c.Float64("max-request-rate"),
		MaxRequestBurst:   c.Int("max-request-burst"),
		MaxRateRefusals:   c.Int("max-rate-refusals"),
		RateRefusalWindow: c.Duration("rate-refusal-window"),
		MaxHeaderSize:     c.Int("max-header-size"),
		IdleTimeout:       c.Duration("idle-timeout"),
	}
}
