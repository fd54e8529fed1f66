package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
)

func clusterCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster; manage a broker group's raft membership and leadership",
		Subcommands: append([]*ucli.Command{{
			Name:   "status",
			Usage:  "per node: raft role, term, commit and applied index, lag behind the leader",
			Flags:  []ucli.Flag{namesrvFlag()},
			Action: withAdmin(clusterStatus),
		}}, append(raftCommands(), drainCommands()...)...),
	}
}

// nodeStatus is one row of `cluster status`.
type nodeStatus struct {
	group, addr string
	table       map[string]string
	err         error
}

func clusterStatus(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return err
	}
	var rows []nodeStatus
	for _, name := range slices.Sorted(maps.Keys(ci.BrokerAddrTable)) {
		for _, addr := range ci.BrokerAddrTable[name].BrokerAddrs {
			table, err := a.BrokerRuntime(ctx, addr)
			rows = append(rows, nodeStatus{group: name, addr: addr, table: table, err: err})
		}
	}
	slices.SortFunc(rows, func(x, y nodeStatus) int {
		if x.group != y.group {
			return strings.Compare(x.group, y.group)
		}
		return strings.Compare(x.addr, y.addr)
	})
	printStatus(c.App.Writer, rows)
	return nil
}

func printStatus(out io.Writer, rows []nodeStatus) {
	leaderLast := map[string]int64{}
	for _, r := range rows {
		if r.err == nil && r.table["raftState"] == "Leader" {
			leaderLast[r.group], _ = strconv.ParseInt(r.table["raftLastLogIndex"], 10, 64)
		}
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tNODE\tADDRESS\tROLE\tTERM\tCOMMIT\tAPPLIED\tLAG")
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(w, "%s\t?\t%s\tunreachable\t\t\t\t%v\n", r.group, r.addr, r.err)
			continue
		}
		t := r.table
		lag := "-"
		if last, ok := leaderLast[r.group]; ok {
			applied, _ := strconv.ParseInt(t["raftAppliedIndex"], 10, 64)
			lag = strconv.FormatInt(max(0, last-applied), 10)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.group, t["raftNodeId"], r.addr, t["raftState"],
			t["raftTerm"], t["raftCommitIndex"], t["raftAppliedIndex"], lag)
	}
	w.Flush()
}
