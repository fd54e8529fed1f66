package dashboard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/protocol"
)

// nodeRow is one node of the cluster page.
type nodeRow struct {
	Addr string
	// BrokerID is the node's id in the name server's table (0 = leader).
	BrokerID int64
	// Table is the node's runtime info (nil if it could not be read).
	Table map[string]string
	// Lag is how far the node's applied index is behind the leader's last
	// log index, "-" without a known leader.
	Lag string
	Err *errView
}

// Leader reports whether the node says it leads.
func (n nodeRow) Leader() bool { return n.Table["raftState"] == "Leader" }

// groupView is one broker group of the cluster page.
type groupView struct {
	Name, Cluster string
	Nodes         []nodeRow
	// Followers are the node ids a leadership transfer may name.
	Followers []string
}

// clusterData is the cluster page.
type clusterData struct {
	Groups []groupView
}

func (s *Server) clusterPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	groups, err := s.clusterGroups(ctx)
	if err != nil {
		s.failCluster(w, r, "Cluster", err)
		return
	}
	s.render(w, http.StatusOK, "cluster", view{Title: "Cluster", Nav: "cluster", Data: clusterData{Groups: groups}})
}

// clusterGroups reads the name server's cluster table and every node's
// runtime info; an unreachable node is a row with an error, not a failure.
func (s *Server) clusterGroups(ctx context.Context) ([]groupView, error) {
	ci, err := s.admin.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	clusterOf := map[string]string{}
	for c, names := range ci.ClusterAddrTable {
		for _, n := range names {
			clusterOf[n] = c
		}
	}
	var out []groupView
	for _, name := range slices.Sorted(maps.Keys(ci.BrokerAddrTable)) {
		g := groupView{Name: name, Cluster: clusterOf[name]}
		for _, id := range slices.Sorted(maps.Keys(ci.BrokerAddrTable[name].BrokerAddrs)) {
			addr := ci.BrokerAddrTable[name].BrokerAddrs[id]
			row := nodeRow{Addr: addr, BrokerID: id}
			if row.Table, err = s.admin.BrokerRuntime(ctx, addr); err != nil {
				ev := describe(err)
				row.Err = &ev
			}
			g.Nodes = append(g.Nodes, row)
		}
		fillLag(g.Nodes)
		for _, n := range g.Nodes {
			if n.Table != nil && !n.Leader() {
				g.Followers = append(g.Followers, n.Table["raftNodeId"])
			}
		}
		slices.SortFunc(g.Nodes, func(x, y nodeRow) int { return cmp.Compare(x.Table["raftNodeId"], y.Table["raftNodeId"]) })
		out = append(out, g)
	}
	return out, nil
}

// fillLag sets each node's lag behind its group's leader, as
// `raftmq cluster status` computes it.
func fillLag(nodes []nodeRow) {
	last, known := int64(0), false
	for _, n := range nodes {
		if n.Leader() {
			last, _ = strconv.ParseInt(n.Table["raftLastLogIndex"], 10, 64)
			known = true
		}
	}
	for i := range nodes {
		nodes[i].Lag = "-"
		if known && nodes[i].Table != nil {
			applied, _ := strconv.ParseInt(nodes[i].Table["raftAppliedIndex"], 10, 64)
			nodes[i].Lag = strconv.FormatInt(max(0, last-applied), 10)
		}
	}
}

// resultData is a form's result page.
type resultData struct {
	Heading string
	Lines   []string
	Back    string
	// Table, if set, has a header row and then rows.
	Table [][]string
	// Link, if set, is a follow-up page and LinkText its label.
	Link, LinkText string
}

// transferLeader hands a group's leadership to the named follower (or the
// most caught-up one) and reports who leads afterwards.
func (s *Server) transferLeader(w http.ResponseWriter, r *http.Request) {
	group, to := r.PostFormValue("group"), r.PostFormValue("to")
	if group == "" {
		s.badRequest(w, r, errors.New("dashboard: no group named"))
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	if err := s.admin.TransferLeadership(ctx, group, to); err != nil {
		s.failCluster(w, r, "Leadership transfer", err)
		return
	}
	res := resultData{Heading: "Leadership of " + group + " transferred", Back: "/"}
	if m, ok := s.newLeader(ctx, group); ok {
		res.Lines = append(res.Lines, fmt.Sprintf("The leader is now %s (%s).", m.ID, m.RemotingAddr))
	} else {
		res.Lines = append(res.Lines, "No member names the new leader yet; see the cluster page.")
	}
	s.render(w, http.StatusOK, "result", view{Title: "Leadership transfer", Nav: "cluster", Data: res})
}

// newLeader waits, up to leaderWait, until the group's members name a
// leader (right after a transfer the node asked may not know it yet).
func (s *Server) newLeader(ctx context.Context, group string) (protocol.RaftMember, bool) {
	ctx, cancel := context.WithTimeout(ctx, leaderWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if members, err := s.admin.RaftMembers(ctx, group); err == nil {
			for _, m := range members {
				if m.Leader {
					return m, true
				}
			}
		}
		select {
		case <-ctx.Done():
			return protocol.RaftMember{}, false
		case <-tick.C:
		}
	}
}

// leaderWait bounds newLeader.
const leaderWait = 3 * time.Second
