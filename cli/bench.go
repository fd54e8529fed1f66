package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/bench"
	"github.com/raftmq/raftmq/internal/tlsconf"
)

func benchCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "bench",
		Usage: "benchmark a running cluster through the SDK: produce, consume, e2e",
		Description: "Examples, against `raftmq dev`:\n" +
			"   raftmq bench produce --mode async --clients 4 --msgs 200000 --queues 8\n" +
			"   raftmq bench produce --mode sync --clients 16 --msgs 20000\n" +
			"   raftmq bench consume --msgs 200000            # reads the backlog from the first offset\n" +
			"   raftmq bench produce --topic sql --props --msgs 200000 && raftmq bench consume --topic sql --sql92 'n = 0' --msgs 20000\n" +
			"   raftmq bench e2e --mode async --clients 2 --duration 10s --topic e2e",
		Subcommands: []*ucli.Command{
			benchWorkload("produce", "send messages and measure the per-message ack latency", bench.Produce),
			benchWorkload("consume", "read a topic's backlog from every queue as fast as possible (fresh group, first offset)", bench.Consume),
			benchWorkload("e2e", "produce and consume at once; the latency is from send to receipt", bench.E2E),
			benchPortsCommand(), benchCertsCommand(),
		},
	}
}

func benchFlags() []ucli.Flag {
	def := bench.DefaultConfig()
	return []ucli.Flag{
		namesrvFlag(),
		&ucli.StringFlag{Name: "topic", Aliases: []string{"t"}, Value: def.Topic, Usage: "topic"},
		&ucli.IntFlag{Name: "size", Value: def.Size, Usage: "message body size in bytes"},
		&ucli.IntFlag{Name: "clients", Aliases: []string{"c"}, Value: def.Clients, Usage: "producers (produce, e2e) or pull consumers (consume), each with its own connections"},
		&ucli.IntFlag{Name: "msgs", Aliases: []string{"m"}, Value: def.Msgs, Usage: "total messages over all clients (0: run for --duration)"},
		&ucli.DurationFlag{Name: "duration", Aliases: []string{"d"}, Usage: "run this long instead of a message count (sets --msgs 0)"},
		&ucli.StringFlag{Name: "mode", Value: def.Mode, Usage: "sync, async (SendAsync, --inflight per client), batch (SendBatch of --batch) or txn (each message in a committed transaction)"},
		&ucli.IntFlag{Name: "batch", Value: def.Batch, Usage: "messages per SendBatch (batch mode); maxMsgNums per pull (consume, e2e)"},
		&ucli.IntFlag{Name: "inflight", Value: def.InFlight, Usage: "async sends outstanding per client"},
		&ucli.IntFlag{Name: "rate", Usage: "produce: at most this many messages per second over all clients (0: unlimited)"},
		&ucli.IntFlag{Name: "queues", Aliases: []string{"q"}, Usage: "create the topic with this many queues per group first (0: use it as it is)"},
		&ucli.IntFlag{Name: "topics", Value: 1, Usage: "spread the workload over this many topics <topic>-0 … (a group holds at most 1024 queues per topic)"},
		&ucli.BoolFlag{Name: "props", Usage: "produce: give message number k the property n=k%10 and the tag t<k%4> (a backlog for --sql92)"},
		&ucli.StringFlag{Name: "sql92", Usage: "consume: subscribe with this SQL92 condition (e.g. \"n < 5\" over a --props backlog); --msgs is the count expected to match"},
		&ucli.StringFlag{Name: "group", Usage: "consumer group (default: a fresh one)"},
		&ucli.BoolFlag{Name: "push", Usage: "e2e: receive with a push consumer's handler (as applications do) instead of pull consumers"},
		&ucli.DurationFlag{Name: "idle", Value: def.Idle, Usage: "consume, e2e: stop when no message arrived for this long"},
		&ucli.StringFlag{Name: "csv", Usage: "append the result as a row to this CSV file"},
		&ucli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of this (client) process to this file"},
		&ucli.BoolFlag{Name: "no-progress", Usage: "do not print the progress line on stderr"},
	}
}

func benchConfig(c *ucli.Context) bench.Config {
	cfg := bench.Config{
		NameServers: splitList(c.String("namesrv")), Topic: c.String("topic"), Size: c.Int("size"),
		Clients: c.Int("clients"), Msgs: c.Int("msgs"), Mode: c.String("mode"), Batch: c.Int("batch"),
		InFlight: c.Int("inflight"), Rate: c.Int("rate"), Queues: c.Int("queues"), Topics: c.Int("topics"), Group: c.String("group"), Idle: c.Duration("idle"),
		Props: c.Bool("props"), SQL92: c.String("sql92"), Push: c.Bool("push"),
	}
	if d := c.Duration("duration"); d > 0 {
		cfg.Duration = d
		if !c.IsSet("msgs") {
			cfg.Msgs = 0
		}
	}
	if !c.Bool("no-progress") {
		cfg.Progress = c.App.ErrWriter
	}
	return cfg
}

func benchWorkload(name, usage string, run func(context.Context, bench.Config) (*bench.Result, error)) *ucli.Command {
	return &ucli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: " ",
		Flags:     benchFlags(),
		Action: func(c *ucli.Context) error {
			ctx, stop := signalContext(c.Context)
			defer stop()
			if path := c.String("cpuprofile"); path != "" {
				f, err := os.Create(path)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			cfg := benchConfig(c)
			cr, tc, err := clientSecurity(c)
			if err != nil {
				return err
			}
			cfg.Credentials, cfg.TLS = cr, tc
			res, err := run(ctx, cfg)
			if res != nil {
				if serr := res.Summary(c.App.Writer); serr != nil {
					return serr
				}
				if path := c.String("csv"); path != "" {
					if cerr := res.WriteCSV(path); cerr != nil {
						return cerr
					}
				}
			}
			if err != nil {
				return fmt.Errorf("bench %s: %w", name, err)
			}
			if res.Errors > 0 {
				fmt.Fprintf(c.App.ErrWriter, "raftmq bench %s: %d errors\n", name, res.Errors)
			}
			return nil
		},
	}
}

// benchPortsCommand prints free loopback TCP ports, for scripts that start
// a cluster (scripts/bench.sh).
func benchPortsCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "ports",
		Usage:     "print N free loopback TCP ports, space-separated",
		ArgsUsage: "N",
		Hidden:    true,
		Action: func(c *ucli.Context) error {
			var n int
			if _, err := fmt.Sscan(c.Args().First(), &n); err != nil || n <= 0 {
				return fmt.Errorf("want a positive port count, got %q", c.Args().First())
			}
			return freePorts(c.App.Writer, n)
		},
	}
}

// benchCertsCommand writes a throwaway CA, server and client certificates
// for loopback (scripts/bench.sh's TLS runs).
func benchCertsCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "certs",
		Usage:  "write a throwaway CA and loopback server/client certificates into --dir",
		Hidden: true,
		Flags:  []ucli.Flag{&ucli.StringFlag{Name: "dir", Required: true}},
		Action: func(c *ucli.Context) error {
			g, err := tlsconf.Generate(c.String("dir"), []string{"127.0.0.1", "localhost"}, 24*time.Hour)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(c.App.Writer, g.CA, g.ServerCert, g.ServerKey)
			return err
		},
	}
}

// freePorts binds n listeners on port 0 at once (so the ports differ),
// releases them and prints their ports.
func freePorts(w io.Writer, n int) error {
	var ports []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		ls = append(ls, l)
		_, p, _ := net.SplitHostPort(l.Addr().String())
		ports = append(ports, p)
	}
	_, err := fmt.Fprintln(w, strings.Join(ports, " "))
	return err
}
