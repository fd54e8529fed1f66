package broker

// Admin: GET_BROKER_RUNTIME_INFO (28) answers RocketMQ's KVTable JSON,
// {"table":{...}}, every value a string. It has the RocketMQ keys that mean
// something here (brokerVersionDesc, msgPutTotalTodayNow — messages this
// node stored as leader since it started —, commitLogMinOffset,
// commitLogMaxOffset, runtime, ...) and raftmq's raft keys, read by
// `raftmq cluster status`: raftNodeId, raftState (Leader, Follower,
// Candidate, Shutdown), raftTerm, raftCommitIndex, raftAppliedIndex,
// raftLastLogIndex, raftLeaderId, raftLeaderAddr (the leader's raft
// address) and raftLeaderRemotingAddr. Disk: commitLogDiskRatio
// (RocketMQ's key: the used fraction of the commitlog's file system, as
// "0.4213"), and raftmq's commitLogDiskFreeBytes (absent while unknown) and
// commitLogDiskFull ("true" while the node refuses writes for lack of
// space), read by the dashboard. putTps and getTransferedTps are
// RocketMQ's rate strings (messages per second stored and delivered over
// the last 10 s, minute and 10 minutes, "12.00 10.50 3.20"), and
// msgGetTotalTodayNow the messages delivered since start, as mqadmin
// clusterList and rocketmq-dashboard read them.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

// brokerVersionDesc is the RocketMQ version raftmq's protocol follows.
const (
	brokerVersionDesc = "V4_9_7"
	brokerVersion     = "417"
)

// startTime is when the process loaded this package, for "runtime".
var startTime = time.Now()

// runtimeInfo serves GET_BROKER_RUNTIME_INFO and the HTTP gauges.
type runtimeInfo struct {
	rep     *replica
	store   *store.Store
	puts    *putStats
	stats   *brokerStats
	cluster string
}

func (r *runtimeInfo) register(m mux) { m.HandleFunc(remoting.ReqGetBrokerRuntimeInfo, r.runtimeInfo) }

func (r *runtimeInfo) runtimeInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return jsonResponse(req, protocol.KVTable{Table: r.table()})
}

func (r *runtimeInfo) table() map[string]string {
	t := map[string]string{
		"brokerVersionDesc":   brokerVersionDesc,
		"brokerVersion":       brokerVersion,
		"msgPutTotalTodayNow": strconv.FormatInt(r.puts.messages.Load(), 10),
		"msgPutBytesTotal":    strconv.FormatInt(r.puts.bytes.Load(), 10),
		"msgPutDuplicates":    strconv.FormatInt(r.puts.duplicates.Load(), 10),
		"commitLogMaxOffset":  strconv.FormatInt(r.store.MaxCommitOffset(), 10),
		"bootTimestamp":       strconv.FormatInt(startTime.UnixMilli(), 10),
		"runtime":             formatRuntime(time.Since(startTime)),
		"brokerName":          r.rep.group,
		"clusterName":         r.cluster,
		"brokerAddr":          r.rep.self.RemotingAddr,
	}
	t["putTps"] = r.stats.tpsTriple(protocol.StatsBrokerPut, r.cluster)
	t["getTransferedTps"] = r.stats.tpsTriple(protocol.StatsBrokerGet, r.cluster)
	t["msgGetTotalTodayNow"] = strconv.FormatInt(r.stats.total(protocol.StatsBrokerGet, r.cluster), 10)
	if minOff, err := r.store.MinCommitOffset(); err == nil {
		t["commitLogMinOffset"] = strconv.FormatInt(minOff, 10)
	}
	r.diskKeys(t)
	node := r.rep.node
	rf := node.Raft()
	stats := rf.Stats()
	_, leaderID := node.Leader()
	leaderAddr, _ := rf.LeaderWithID()
	t["raftNodeId"] = r.rep.self.ID
	t["raftState"] = rf.State().String()
	t["raftTerm"] = stats["term"]
	t["raftCommitIndex"] = stats["commit_index"]
	t["raftAppliedIndex"] = stats["applied_index"]
	t["raftLastLogIndex"] = stats["last_log_index"]
	t["raftLastContact"] = stats["last_contact"]
	t["raftLeaderId"] = leaderID
	t["raftLeaderAddr"] = string(leaderAddr)
	t["raftLeaderRemotingAddr"] = r.rep.remotingAddrOf(leaderID)
	t["metadataAppliedIndex"] = strconv.FormatUint(node.AppliedIndex(), 10)
	return t
}

// formatRuntime is RocketMQ's "[ d days, h hours, m minutes, s seconds ]".
func formatRuntime(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", s/86400, s%86400/3600, s%3600/60, s%60)
}

// diskKeys adds the commitlog's disk use to t.
func (r *runtimeInfo) diskKeys(t map[string]string) {
	clog := r.store.Log()
	if usage, err := clog.DiskUsage(); err == nil {
		t["commitLogDiskRatio"] = strconv.FormatFloat(usage, 'f', 4, 64)
	}
	if free := clog.FreeBytes(); free >= 0 {
		t["commitLogDiskFreeBytes"] = strconv.FormatInt(free, 10)
	}
	t["commitLogDiskFull"] = strconv.FormatBool(clog.DiskFull())
}
