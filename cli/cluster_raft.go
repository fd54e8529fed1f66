package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
)

func brokerNameFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "broker-name", Aliases: []string{"b"}, Value: "broker-a", Usage: "broker group"}
}

// raftCommands are the membership and leadership subcommands of `cluster`.
func raftCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name:   "members",
			Usage:  "list a broker group's raft voters",
			Flags:  []ucli.Flag{namesrvFlag(), brokerNameFlag()},
			Action: withAdmin(clusterMembers),
		},
		{
			Name:  "add-voter",
			Usage: "add a node (started with --join) to a broker group",
			Flags: []ucli.Flag{namesrvFlag(), brokerNameFlag(),
				&ucli.StringFlag{Name: "id", Required: true, Usage: "the new node's id"},
				&ucli.StringFlag{Name: "raft-addr", Required: true, Usage: "the new node's raft host:port"}},
			Action: withAdmin(func(ctx context.Context, c *ucli.Context, a *client.Admin) error {
				if err := a.AddVoter(ctx, c.String("broker-name"), c.String("id"), c.String("raft-addr")); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "added %s (%s) to %s\n", c.String("id"), c.String("raft-addr"), c.String("broker-name"))
				return nil
			}),
		},
		{
			Name:  "remove",
			Usage: "remove a node from a broker group",
			Flags: []ucli.Flag{namesrvFlag(), brokerNameFlag(),
				&ucli.StringFlag{Name: "id", Required: true, Usage: "the node to remove"}},
			Action: withAdmin(func(ctx context.Context, c *ucli.Context, a *client.Admin) error {
				if err := a.RemoveServer(ctx, c.String("broker-name"), c.String("id")); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "removed %s from %s\n", c.String("id"), c.String("broker-name"))
				return nil
			}),
		},
		{
			Name:  "transfer",
			Usage: "hand a broker group's leadership to a node (default: the most caught-up follower)",
			Flags: []ucli.Flag{namesrvFlag(), brokerNameFlag(),
				&ucli.StringFlag{Name: "to", Usage: "the node to lead"}},
			Action: withAdmin(func(ctx context.Context, c *ucli.Context, a *client.Admin) error {
				if err := a.TransferLeadership(ctx, c.String("broker-name"), c.String("to")); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "leadership of %s transferred\n", c.String("broker-name"))
				return nil
			}),
		},
	}
}

func clusterMembers(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	ms, err := a.RaftMembers(ctx, c.String("broker-name"))
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tRAFT\tCLIENTS\tROLE")
	for _, m := range ms {
		role := "follower"
		if m.Leader {
			role = "leader"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.ID, m.RaftAddr, m.RemotingAddr, role)
	}
	return w.Flush()
}
