package cli

import (
	"context"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
)

// drainCommands take a broker group out of (and back into) service.
func drainCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name:  "wipe-write-perm",
			Usage: "stop a broker group taking sends (replicated brokerPermission=4, and every name server's routes at once)",
			Flags: []ucli.Flag{namesrvFlag(), brokerNameFlag(), outputFlag()},
			Action: withAdmin(func(ctx context.Context, c *ucli.Context, a *client.Admin) error {
				return setWritable(ctx, c, a, false)
			}),
		},
		{
			Name:   "add-write-perm",
			Usage:  "let a broker group take sends again",
			Flags:  []ucli.Flag{namesrvFlag(), brokerNameFlag(), outputFlag()},
			Action: withAdmin(func(ctx context.Context, c *ucli.Context, a *client.Admin) error { return setWritable(ctx, c, a, true) }),
		},
		{
			Name: "drain",
			Usage: "wipe a broker group's write permission and wait until its consumers have consumed all it holds; " +
				"then stop its nodes (they leave the routes)",
			Flags: []ucli.Flag{namesrvFlag(), brokerNameFlag(), outputFlag(),
				&ucli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Usage: "give up after this long"},
				&ucli.DurationFlag{Name: "interval", Value: 2 * time.Second, Usage: "how often to check the consumers' lag"}},
			Action: drainAction,
		},
	}
}

func setWritable(ctx context.Context, c *ucli.Context, a *client.Admin, writable bool) error {
	if err := a.SetWritable(ctx, c.String("broker-name"), writable); err != nil {
		return err
	}
	what := "no longer takes sends"
	if writable {
		what = "takes sends again"
	}
	return report(c, map[string]any{"brokerName": c.String("broker-name"), "writable": writable},
		"broker group %s %s", c.String("broker-name"), what)
}

// drainAction runs Drain with its own timeout (longer than adminTimeout).
func drainAction(c *ucli.Context) error {
	if _, err := jsonOutput(c); err != nil {
		return err
	}
	a, err := newAdmin(c)
	if err != nil {
		return err
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	name := c.String("broker-name")
	err = a.Drain(ctx, name, c.Duration("interval"), func(p client.DrainProgress) {
		fmt.Fprintf(c.App.ErrWriter, "\r%s: %d messages left on %d consumer queues   ", name, p.Lag, len(p.Queues))
	})
	fmt.Fprintln(c.App.ErrWriter)
	if err != nil {
		return err
	}
	return report(c, map[string]any{"brokerName": name, "drained": true},
		"broker group %s is drained: stop its nodes (they unregister and leave the routes)", name)
}
