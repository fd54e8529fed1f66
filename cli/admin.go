package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/namesrv"
	"github.com/raftmq/raftmq/remoting"
)

func namesrvFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "namesrv", Aliases: []string{"n"}, Value: "127.0.0.1:9876", Usage: "name server address", EnvVars: []string{"NAMESRV_ADDR"}}
}

// admin is a remoting client bound to one name server.
type admin struct {
	cl *remoting.Client
	ns string
}

func newAdmin(c *ucli.Context) (*admin, error) {
	cl, err := remoting.NewClient(remoting.DefaultClientConfig())
	if err != nil {
		return nil, err
	}
	return &admin{cl: cl, ns: c.String("namesrv")}, nil
}

func (a *admin) close() { a.cl.Close() }

// call invokes req at addr and turns a non-SUCCESS answer into an error.
func (a *admin) call(addr string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := a.cl.Invoke(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", remoting.CodeName(req.Code), addr, err)
	}
	if err := remoting.AsError(resp); err != nil {
		return nil, fmt.Errorf("%s %s: %w", remoting.CodeName(req.Code), addr, err)
	}
	return resp, nil
}

func (a *admin) callJSON(addr string, req *remoting.Command, v any) error {
	resp, err := a.call(addr, req)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(resp.Body, v); err != nil {
		return fmt.Errorf("%s: decoding answer: %w", remoting.CodeName(req.Code), err)
	}
	return nil
}

func (a *admin) clusterInfo() (namesrv.ClusterInfo, error) {
	var ci namesrv.ClusterInfo
	err := a.callJSON(a.ns, remoting.NewRequest(remoting.ReqGetBrokerClusterInfo, nil, nil), &ci)
	return ci, err
}

func withAdmin(fn func(c *ucli.Context, a *admin) error) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		a, err := newAdmin(c)
		if err != nil {
			return err
		}
		defer a.close()
		return fn(c, a)
	}
}

func topicCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "topic",
		Usage: "create, list and inspect topics",
		Subcommands: []*ucli.Command{
			{
				Name:  "create",
				Usage: "create or update a topic on every broker group of a cluster",
				Flags: []ucli.Flag{
					namesrvFlag(),
					&ucli.StringFlag{Name: "topic", Aliases: []string{"t"}, Required: true},
					&ucli.IntFlag{Name: "queues", Aliases: []string{"q"}, Value: 8, Usage: "read and write queue count"},
					&ucli.IntFlag{Name: "perm", Value: 6, Usage: "permission bits: 4 read, 2 write"},
					&ucli.StringFlag{Name: "cluster", Aliases: []string{"c"}, Usage: "only this cluster's groups (default all)"},
					&ucli.BoolFlag{Name: "order", Usage: "mark the topic as ordered"},
				},
				Action: withAdmin(topicCreate),
			},
			{
				Name:   "list",
				Usage:  "list every topic the name server knows",
				Flags:  []ucli.Flag{namesrvFlag()},
				Action: withAdmin(topicList),
			},
			{
				Name:   "route",
				Usage:  "show a topic's route: queues per broker group and the group's nodes",
				Flags:  []ucli.Flag{namesrvFlag(), &ucli.StringFlag{Name: "topic", Aliases: []string{"t"}, Required: true}},
				Action: withAdmin(topicRoute),
			},
		},
	}
}

func topicCreate(c *ucli.Context, a *admin) error {
	ci, err := a.clusterInfo()
	if err != nil {
		return err
	}
	q := strconv.Itoa(c.Int("queues"))
	ext := map[string]string{
		"topic": c.String("topic"), "defaultTopic": "TBW102", "readQueueNums": q, "writeQueueNums": q,
		"perm": strconv.Itoa(c.Int("perm")), "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
		"order": strconv.FormatBool(c.Bool("order")),
	}
	created := 0
	for _, name := range sortedKeys(ci.BrokerAddrTable) {
		bd := ci.BrokerAddrTable[name]
		if cl := c.String("cluster"); cl != "" && bd.Cluster != cl {
			continue
		}
		addr, ok := bd.BrokerAddrs[0]
		if !ok {
			return fmt.Errorf("broker group %s has no leader address", name)
		}
		if _, err := a.call(addr, remoting.NewRequest(remoting.ReqUpdateAndCreateTopic, ext, nil)); err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "created topic %s on %s (%s, %s queues)\n", c.String("topic"), name, addr, q)
		created++
	}
	if created == 0 {
		return fmt.Errorf("no broker group found (cluster %q)", c.String("cluster"))
	}
	return nil
}

func topicList(c *ucli.Context, a *admin) error {
	var tl namesrv.TopicList
	if err := a.callJSON(a.ns, remoting.NewRequest(remoting.ReqGetAllTopicListFromNameServer, nil, nil), &tl); err != nil {
		return err
	}
	for _, t := range tl.TopicList {
		fmt.Fprintln(c.App.Writer, t)
	}
	return nil
}

func topicRoute(c *ucli.Context, a *admin) error {
	var rd namesrv.TopicRouteData
	req := remoting.NewRequest(remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": c.String("topic")}, nil)
	if err := a.callJSON(a.ns, req, &rd); err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "BROKER\tREAD\tWRITE\tPERM\tNODES (0 = leader)")
	for _, q := range rd.QueueDatas {
		nodes := ""
		for _, bd := range rd.BrokerDatas {
			if bd.BrokerName == q.BrokerName {
				nodes = formatAddrs(bd.BrokerAddrs)
			}
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", q.BrokerName, q.ReadQueueNums, q.WriteQueueNums, q.Perm, nodes)
	}
	return w.Flush()
}

func formatAddrs(m map[int64]string) string {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d=%s", id, m[id])
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func clusterCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster",
		Subcommands: []*ucli.Command{{
			Name:   "status",
			Usage:  "per node: raft role, term, commit and applied index, lag behind the leader",
			Flags:  []ucli.Flag{namesrvFlag()},
			Action: withAdmin(clusterStatus),
		}},
	}
}

// nodeStatus is one row of `cluster status`.
type nodeStatus struct {
	group, addr string
	table       map[string]string
	err         error
}

func clusterStatus(c *ucli.Context, a *admin) error {
	ci, err := a.clusterInfo()
	if err != nil {
		return err
	}
	var rows []nodeStatus
	for _, name := range sortedKeys(ci.BrokerAddrTable) {
		for _, addr := range ci.BrokerAddrTable[name].BrokerAddrs {
			rows = append(rows, a.nodeStatus(name, addr))
		}
	}
	slices.SortFunc(rows, func(x, y nodeStatus) int {
		if x.group != y.group {
			return compareStrings(x.group, y.group)
		}
		return compareStrings(x.addr, y.addr)
	})
	printStatus(c.App.Writer, rows)
	return nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (a *admin) nodeStatus(group, addr string) nodeStatus {
	var info struct {
		Table map[string]string `json:"table"`
	}
	err := a.callJSON(addr, remoting.NewRequest(remoting.ReqGetBrokerRuntimeInfo, nil, nil), &info)
	return nodeStatus{group: group, addr: addr, table: info.Table, err: err}
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
