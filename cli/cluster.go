package cli

import (
	"cmp"
	"context"
	"fmt"
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
		Usage: "inspect the cluster and its broker groups' settings; take a group out of and back into service",
		Subcommands: append([]*ucli.Command{
			{
				Name:   "list",
				Usage:  "every node of every cluster: version, raft role, send and delivery rates, disk use (mqadmin clusterList)",
				Flags:  []ucli.Flag{namesrvFlag(), outputFlag()},
				Action: withAdmin(clusterList),
			},
			statusCommand(""),
			brokerConfigCommand(),
		}, append(raftCommands(), drainCommands()...)...),
	}
}

// statusCommand is `cluster status` (and `raft status`, which says so in
// its usage).
func statusCommand(usageSuffix string) *ucli.Command {
	return &ucli.Command{
		Name:   "status",
		Usage:  "per node: raft role, term, commit and applied index, lag behind the leader" + usageSuffix,
		Flags:  []ucli.Flag{namesrvFlag(), outputFlag()},
		Action: withAdmin(clusterStatus),
	}
}

// nodeRow is one node of `cluster list` and `cluster status`, from its
// GET_BROKER_RUNTIME_INFO.
type nodeRow struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	Addr       string `json:"addr"`
	NodeID     string `json:"nodeId"`
	Role       string `json:"role"`
	Term       int64  `json:"term"`
	Commit     int64  `json:"commitIndex"`
	Applied    int64  `json:"appliedIndex"`
	LastIndex  int64  `json:"lastLogIndex"`
	// Lag is the leader's last log index minus this node's applied index
	// (-1 when the group's leader did not answer).
	Lag       int64   `json:"lag"`
	Version   string  `json:"version"`
	InTps     float64 `json:"inTps"`
	OutTps    float64 `json:"outTps"`
	DiskRatio float64 `json:"diskRatio"`
	MaxOffset int64   `json:"commitLogMaxOffset"`
	// Error is why the node did not answer ("" when it did).
	Error string `json:"error,omitempty"`
}

// clusterNodes asks every node of the cluster for its runtime info,
// sorted by group and address, with each group's raft lag filled in.
func clusterNodes(ctx context.Context, a *client.Admin) ([]nodeRow, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	rows := []nodeRow{}
	for _, name := range slices.Sorted(maps.Keys(ci.BrokerAddrTable)) {
		bd := ci.BrokerAddrTable[name]
		for _, addr := range bd.BrokerAddrs {
			table, err := a.BrokerRuntime(ctx, addr)
			rows = append(rows, newNodeRow(bd.Cluster, name, addr, table, err))
		}
	}
	slices.SortFunc(rows, func(x, y nodeRow) int {
		return cmp.Or(strings.Compare(x.BrokerName, y.BrokerName), strings.Compare(x.Addr, y.Addr))
	})
	fillLag(rows)
	return rows, nil
}

func newNodeRow(cluster, name, addr string, t map[string]string, err error) nodeRow {
	r := nodeRow{Cluster: cluster, BrokerName: name, Addr: addr, Lag: -1}
	if err != nil {
		r.Role, r.Error = "unreachable", err.Error()
		return r
	}
	num := func(k string) int64 { n, _ := strconv.ParseInt(t[k], 10, 64); return n }
	first := func(k string) float64 {
		f, _ := strconv.ParseFloat(strings.Fields(t[k] + " 0")[0], 64)
		return f
	}
	r.NodeID, r.Role, r.Version = t["raftNodeId"], t["raftState"], t["brokerVersionDesc"]
	r.Term, r.Commit, r.Applied, r.LastIndex = num("raftTerm"), num("raftCommitIndex"), num("raftAppliedIndex"), num("raftLastLogIndex")
	r.InTps, r.OutTps = first("putTps"), first("getTransferedTps")
	r.DiskRatio, _ = strconv.ParseFloat(t["commitLogDiskRatio"], 64)
	r.MaxOffset = num("commitLogMaxOffset")
	return r
}

// fillLag sets each answering node's lag behind its group's leader.
func fillLag(rows []nodeRow) {
	leaderLast := map[string]int64{}
	for _, r := range rows {
		if r.Role == "Leader" {
			leaderLast[r.BrokerName] = r.LastIndex
		}
	}
	for i := range rows {
		if last, ok := leaderLast[rows[i].BrokerName]; ok && rows[i].Error == "" {
			rows[i].Lag = max(0, last-rows[i].Applied)
		}
	}
}

func clusterList(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	rows, err := clusterNodes(ctx, a)
	if err != nil {
		return err
	}
	return emit(c, rows, func() error {
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "CLUSTER\tGROUP\tNODE\tADDRESS\tROLE\tVERSION\tIN TPS\tOUT TPS\tDISK\tERROR")
		for _, r := range rows {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.1f%%\t%s\n", r.Cluster, r.BrokerName, r.NodeID, r.Addr,
				r.Role, r.Version, r.InTps, r.OutTps, 100*r.DiskRatio, r.Error)
		}
		return w.Flush()
	})
}

func clusterStatus(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	rows, err := clusterNodes(ctx, a)
	if err != nil {
		return err
	}
	return emit(c, rows, func() error {
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "GROUP\tNODE\tADDRESS\tROLE\tTERM\tCOMMIT\tAPPLIED\tLAG")
		for _, r := range rows {
			if r.Error != "" {
				fmt.Fprintf(w, "%s\t?\t%s\tunreachable\t\t\t\t%s\n", r.BrokerName, r.Addr, r.Error)
				continue
			}
			lag := "-"
			if r.Lag >= 0 {
				lag = strconv.FormatInt(r.Lag, 10)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.BrokerName, r.NodeID, r.Addr, r.Role, r.Term, r.Commit, r.Applied, lag)
		}
		return w.Flush()
	})
}

// brokerConfigCommand reads and changes a broker group's settings.
func brokerConfigCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "broker-config",
		Usage: "read or change a broker group's settings (mqadmin getBrokerConfig / updateBrokerConfig)",
		Subcommands: []*ucli.Command{
			{
				Name:  "get",
				Usage: "print a node's settings under RocketMQ's names (default: every node of the group)",
				Flags: []ucli.Flag{namesrvFlag(), brokerNameFlag(), outputFlag(),
					&ucli.StringFlag{Name: "addr", Usage: "only this node (host:port)"},
					&ucli.StringSliceFlag{Name: "key", Aliases: []string{"k"}, Usage: "only these settings"}},
				Action: withAdmin(brokerConfigGet),
			},
			{
				Name:      "set",
				Usage:     "change settings of a broker group through raft; only those that may change at run time (brokerPermission, autoCreateTopicEnable, defaultTopicQueueNums, longPollingEnable, transactionTimeOut, transactionCheckInterval, transactionCheckMax, slaveReadEnable, accessMessageInMemoryMaxRatio, accessMessageInMemoryMaxBytes) are accepted, others are refused by name",
				ArgsUsage: "key=value ...",
				Flags:     []ucli.Flag{namesrvFlag(), brokerNameFlag(), outputFlag()},
				Action:    withAdmin(brokerConfigSet),
			},
		},
	}
}

// nodeConfig is one node's settings in `broker-config get`.
type nodeConfig struct {
	Addr     string            `json:"addr"`
	Settings map[string]string `json:"settings"`
}

func brokerConfigGet(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	addrs, err := nodeAddrs(ctx, c, a)
	if err != nil {
		return err
	}
	out := []nodeConfig{}
	for _, addr := range addrs {
		cfg, err := a.BrokerConfig(ctx, addr)
		if err != nil {
			return err
		}
		if keys := c.StringSlice("key"); len(keys) > 0 {
			picked := map[string]string{}
			for _, k := range keys {
				v, ok := cfg[k]
				if !ok {
					return fmt.Errorf("%s has no setting %q", addr, k)
				}
				picked[k] = v
			}
			cfg = picked
		}
		out = append(out, nodeConfig{Addr: addr, Settings: cfg})
	}
	return emit(c, out, func() error {
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NODE\tKEY\tVALUE")
		for _, n := range out {
			for _, k := range slices.Sorted(maps.Keys(n.Settings)) {
				fmt.Fprintf(w, "%s\t%s\t%s\n", n.Addr, k, n.Settings[k])
			}
		}
		return w.Flush()
	})
}

// nodeAddrs is the node --addr names, or every node of --broker-name's
// group, the leader (id 0) first.
func nodeAddrs(ctx context.Context, c *ucli.Context, a *client.Admin) ([]string, error) {
	if addr := c.String("addr"); addr != "" {
		return []string{addr}, nil
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	bd, ok := ci.BrokerAddrTable[c.String("broker-name")]
	if !ok {
		return nil, fmt.Errorf("%w: %s", client.ErrBrokerNotFound, c.String("broker-name"))
	}
	var out []string
	for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
		out = append(out, bd.BrokerAddrs[id])
	}
	return out, nil
}

func brokerConfigSet(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	if !c.Args().Present() {
		return fmt.Errorf("broker-config set needs key=value arguments (e.g. brokerPermission=4)")
	}
	props := map[string]string{}
	for _, arg := range c.Args().Slice() {
		k, v, ok := strings.Cut(arg, "=")
		if !ok || k == "" {
			return fmt.Errorf("argument %q is not key=value", arg)
		}
		props[k] = v
	}
	if err := a.UpdateBrokerConfig(ctx, c.String("broker-name"), props); err != nil {
		return err
	}
	return emit(c, map[string]any{"brokerName": c.String("broker-name"), "settings": props}, func() error {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			fmt.Fprintf(c.App.Writer, "%s: %s=%s\n", c.String("broker-name"), k, props[k])
		}
		return nil
	})
}
