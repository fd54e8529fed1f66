package broker

// Admin: GET_BROKER_RUNTIME_INFO (28) answers RocketMQ's KVTable JSON,
// {"table":{...}}, every value a string. It has the RocketMQ keys that mean
// something here (brokerVersionDesc, msgPutTotalTodayNow — messages this
// node stored as leader since it started —, commitLogMinOffset,
// commitLogMaxOffset, runtime, ...) and raftmq's raft keys, read by
// `raftmq cluster status`: raftNodeId, raftState (Leader, Follower,
// Candidate, Shutdown), raftTerm, raftCommitIndex, raftAppliedIndex,
// raftLastLogIndex, raftLeaderId, raftLeaderAddr (the leader's raft
// address) and raftLeaderRemotingAddr.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/remoting"
)

// brokerVersionDesc is the RocketMQ version raftmq's protocol follows.
const (
	brokerVersionDesc = "V4_9_7"
	brokerVersion     = "417"
)

// startTime is when the process loaded this package, for "runtime".
var startTime = time.Now()

func (b *Broker) registerRuntime() {
	b.handle(remoting.ReqGetBrokerRuntimeInfo, b.runtimeInfo)
}

func (b *Broker) runtimeInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return jsonResponse(req, struct {
		Table map[string]string `json:"table"`
	}{b.runtimeTable()})
}

func (b *Broker) runtimeTable() map[string]string {
	t := map[string]string{
		"brokerVersionDesc":   brokerVersionDesc,
		"brokerVersion":       brokerVersion,
		"msgPutTotalTodayNow": strconv.FormatInt(b.puts.messages.Load(), 10),
		"msgPutBytesTotal":    strconv.FormatInt(b.puts.bytes.Load(), 10),
		"commitLogMaxOffset":  strconv.FormatInt(b.clog.MaxCommitOffset(), 10),
		"bootTimestamp":       strconv.FormatInt(startTime.UnixMilli(), 10),
		"runtime":             formatRuntime(time.Since(startTime)),
		"brokerName":          b.cfg.BrokerName,
		"clusterName":         b.cfg.Cluster,
		"brokerAddr":          b.self.RemotingAddr,
	}
	if minOff, err := b.clog.MinCommitOffset(); err == nil {
		t["commitLogMinOffset"] = strconv.FormatInt(minOff, 10)
	}
	r := b.node.Raft()
	stats := r.Stats()
	_, leaderID := b.node.Leader()
	leaderAddr, _ := r.LeaderWithID()
	t["raftNodeId"] = b.self.ID
	t["raftState"] = r.State().String()
	t["raftTerm"] = stats["term"]
	t["raftCommitIndex"] = stats["commit_index"]
	t["raftAppliedIndex"] = stats["applied_index"]
	t["raftLastLogIndex"] = stats["last_log_index"]
	t["raftLastContact"] = stats["last_contact"]
	t["raftLeaderId"] = leaderID
	t["raftLeaderAddr"] = string(leaderAddr)
	t["raftLeaderRemotingAddr"] = b.peerRemotingAddr(leaderID)
	t["metadataAppliedIndex"] = strconv.FormatUint(b.node.Metadata().AppliedIndex(), 10)
	return t
}

// peerRemotingAddr is the client-facing address of peer id, "" if unknown.
func (b *Broker) peerRemotingAddr(id string) string {
	for _, p := range b.cfg.Peers {
		if p.ID == id {
			return p.RemotingAddr
		}
	}
	return ""
}

// formatRuntime is RocketMQ's "[ d days, h hours, m minutes, s seconds ]".
func formatRuntime(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", s/86400, s%86400/3600, s%3600/60, s%60)
}
