package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/protocol"
)

func clusterFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "cluster", Aliases: []string{"c"}, Usage: "only this cluster's groups (default all)"}
}

func aclCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "acl",
		Usage: "list and change the ACL 1.0 accounts of the broker groups (admin account needed)",
		Subcommands: []*ucli.Command{
			{
				Name:   "list",
				Usage:  "show each group's ACL (secrets masked); --every-node asks every node, to see that they agree",
				Flags:  []ucli.Flag{namesrvFlag(), clusterFlag(), outputFlag(), &ucli.BoolFlag{Name: "every-node"}},
				Action: withAdmin(aclList),
			},
			{
				Name:  "update",
				Usage: "create or update an account in every group (an update without --secret keeps the secret)",
				Flags: []ucli.Flag{namesrvFlag(), clusterFlag(), outputFlag(),
					&ucli.StringFlag{Name: "account", Aliases: []string{"a"}, Required: true, Usage: "the account's access key"},
					&ucli.StringFlag{Name: "secret", Usage: "the account's secret key (6 characters at least)"},
					&ucli.StringFlag{Name: "white-address", Usage: "requests from this address pattern pass unsigned (as RocketMQ)"},
					&ucli.BoolFlag{Name: "admin", Usage: "an admin account"},
					&ucli.StringFlag{Name: "default-topic-perm", Value: "DENY", Usage: "DENY, PUB, SUB or PUB|SUB"},
					&ucli.StringFlag{Name: "default-group-perm", Value: "DENY", Usage: "DENY, PUB, SUB or PUB|SUB"},
					&ucli.StringSliceFlag{Name: "topic-perm", Usage: "topic=PERM, repeatable"},
					&ucli.StringSliceFlag{Name: "group-perm", Usage: "group=PERM, repeatable"},
				},
				Action: withAdmin(aclUpdate),
			},
			{
				Name:   "delete",
				Usage:  "delete an account from every group",
				Flags:  []ucli.Flag{namesrvFlag(), clusterFlag(), outputFlag(), &ucli.StringFlag{Name: "account", Aliases: []string{"a"}, Required: true}},
				Action: withAdmin(aclDelete),
			},
			{
				Name:   "global-white",
				Usage:  "replace globalWhiteRemoteAddresses in every group (requests from them pass unsigned)",
				Flags:  []ucli.Flag{namesrvFlag(), clusterFlag(), outputFlag(), &ucli.StringFlag{Name: "addresses", Usage: "comma-separated patterns; empty clears the list"}},
				Action: withAdmin(aclGlobalWhite),
			},
		},
	}
}

func aclList(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	gs, err := a.ACLFrom(ctx, c.String("cluster"), c.Bool("every-node"))
	if err != nil {
		return err
	}
	if gs == nil {
		gs = []client.GroupACL{}
	}
	return emit(c, gs, func() error { return printACL(c, gs) })
}

func printACL(c *ucli.Context, gs []client.GroupACL) error {
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	for _, g := range gs {
		fmt.Fprintf(w, "group %s at %s: enabled %v, version %d, global white [%s]\n", g.BrokerName, g.Addr, g.Enabled, g.Version,
			strings.Join(g.Config.GlobalWhiteAddrs, ", "))
		fmt.Fprintln(w, "  ACCOUNT\tADMIN\tWHITE\tTOPICS\tGROUPS")
		for _, acc := range g.Config.Accounts {
			fmt.Fprintf(w, "  %s\t%v\t%s\tdefault %s; %s\tdefault %s; %s\n", acc.AccessKey, acc.Admin, acc.WhiteRemoteAddress,
				acc.DefaultTopicPerm, strings.Join(acc.TopicPerms, " "), acc.DefaultGroupPerm, strings.Join(acc.GroupPerms, " "))
		}
	}
	return w.Flush()
}

func aclUpdate(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	acc := protocol.PlainAccessConfig{AccessKey: c.String("account"), SecretKey: c.String("secret"),
		WhiteRemoteAddress: c.String("white-address"), Admin: c.Bool("admin"),
		DefaultTopicPerm: c.String("default-topic-perm"), DefaultGroupPerm: c.String("default-group-perm"),
		TopicPerms: c.StringSlice("topic-perm"), GroupPerms: c.StringSlice("group-perm")}
	ps, err := a.PutACLAccount(ctx, c.String("cluster"), acc)
	return reportPlacements(c, orEmpty(ps), ps, err, placedIn("account "+acc.AccessKey+" written"))
}

func aclDelete(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	ps, err := a.DeleteACLAccount(ctx, c.String("cluster"), c.String("account"))
	return reportPlacements(c, orEmpty(ps), ps, err, placedIn("account "+c.String("account")+" deleted"))
}

func aclGlobalWhite(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	ps, err := a.SetACLGlobalWhiteAddrs(ctx, c.String("cluster"), protocol.SplitList(c.String("addresses")))
	return reportPlacements(c, orEmpty(ps), ps, err, placedIn("global whitelist replaced"))
}
