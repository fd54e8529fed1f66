package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/protocol"
)

func brokerNameFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "broker-name", Aliases: []string{"b"}, Value: "broker-a", Usage: "broker group"}
}

// raftCommand is `raft`: a broker group's raft status, membership,
// leadership and snapshots.
func raftCommand() *ucli.Command {
	cmds := raftCommands()
	for _, c := range cmds {
		if c.Name == "remove" {
			c.Name, c.Aliases = "remove-voter", []string{"remove"}
		}
	}
	return &ucli.Command{
		Name:  "raft",
		Usage: "a broker group's raft: status, members, leadership transfer, add and remove voters, snapshots",
		Subcommands: append([]*ucli.Command{
			statusCommand(" (as cluster status)"),
			{
				Name:  "snapshot",
				Usage: "make nodes take a raft snapshot now, so raft can truncate its log (default: every node of the group)",
				Flags: []ucli.Flag{namesrvFlag(), brokerNameFlag(), outputFlag(),
					&ucli.StringFlag{Name: "addr", Usage: "only the node at this client address"}},
				Action: withAdmin(raftSnapshot),
			},
		}, cmds...),
	}
}

func raftSnapshot(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	addrs, err := nodeAddrs(ctx, c, a)
	if err != nil {
		return err
	}
	out := []client.Snapshot{}
	for _, addr := range addrs {
		s, err := a.RaftSnapshot(ctx, addr)
		if err != nil {
			return err
		}
		out = append(out, s)
	}
	return emit(c, out, func() error {
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NODE\tADDRESS\tINDEX\tTERM\tTAKEN")
		for _, s := range out {
			taken := "yes"
			if !s.Fresh {
				taken = "no (nothing new since the last)"
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\n", s.NodeID, s.Addr, s.Index, s.Term, taken)
		}
		return w.Flush()
	})
}

// raftCommands are the membership and leadership subcommands of `cluster`
// (and of `raft`).
func raftCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name:   "members",
			Usage:  "list a broker group's raft members (voters, and non-voters still catching up)",
			Flags:  []ucli.Flag{namesrvFlag(), brokerNameFlag(), outputFlag()},
			Action: withAdmin(clusterMembers),
		},
		{
			Name:  "add-voter",
			Usage: "add a node (started with --join) to a broker group",
			Flags: []ucli.Flag{namesrvFlag(), brokerNameFlag(), outputFlag(),
				&ucli.StringFlag{Name: "id", Required: true, Usage: "the new node's id"},
				&ucli.StringFlag{Name: "raft-addr", Required: true, Usage: "the new node's raft host:port"}},
			Action: withAdmin(func(ctx context.Context, c *ucli.Context, a *client.Admin) error {
				if err := a.AddVoter(ctx, c.String("broker-name"), c.String("id"), c.String("raft-addr")); err != nil {
					return err
				}
				return report(c, map[string]string{"brokerName": c.String("broker-name"), "added": c.String("id"), "raftAddr": c.String("raft-addr")},
					"added %s (%s) to %s", c.String("id"), c.String("raft-addr"), c.String("broker-name"))
			}),
		},
		{
			Name:  "remove",
			Usage: "remove a node from a broker group",
			Flags: []ucli.Flag{namesrvFlag(), brokerNameFlag(), outputFlag(),
				&ucli.StringFlag{Name: "id", Required: true, Usage: "the node to remove"}},
			Action: withAdmin(func(ctx context.Context, c *ucli.Context, a *client.Admin) error {
				if err := a.RemoveServer(ctx, c.String("broker-name"), c.String("id")); err != nil {
					return err
				}
				return report(c, map[string]string{"brokerName": c.String("broker-name"), "removed": c.String("id")},
					"removed %s from %s", c.String("id"), c.String("broker-name"))
			}),
		},
		{
			Name:  "transfer",
			Usage: "hand a broker group's leadership to a node (default: the most caught-up follower)",
			Flags: []ucli.Flag{namesrvFlag(), brokerNameFlag(), outputFlag(),
				&ucli.StringFlag{Name: "to", Usage: "the node to lead"}},
			Action: withAdmin(func(ctx context.Context, c *ucli.Context, a *client.Admin) error {
				if err := a.TransferLeadership(ctx, c.String("broker-name"), c.String("to")); err != nil {
					return err
				}
				return report(c, map[string]string{"brokerName": c.String("broker-name"), "to": c.String("to")},
					"leadership of %s transferred", c.String("broker-name"))
			}),
		},
	}
}

func clusterMembers(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	ms, err := a.RaftMembers(ctx, c.String("broker-name"))
	if err != nil {
		return err
	}
	if ms == nil {
		ms = []protocol.RaftMember{}
	}
	return emit(c, ms, func() error {
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NODE\tRAFT\tCLIENTS\tROLE")
		for _, m := range ms {
			role := "follower"
			switch {
			case m.Leader:
				role = "leader"
			case m.Nonvoter:
				role = "non-voter (catching up)"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.ID, m.RaftAddr, m.RemotingAddr, role)
		}
		return w.Flush()
	})
}
