package broker

// Follower reads: RocketMQ's "suggest slave". A pull's answer carries
// suggestWhichBrokerId, the node the consumer should pull that queue from
// next; RocketMQ's clients (and raftmq's SDK) follow it while the route
// lists that id. A consumer far behind — more commitlog bytes after what
// its pull read (store.GetResult.Behind) than the threshold, by default
// 40 % of the machine's memory (accessMessageInMemoryMaxRatio) — reads
// what the page cache has likely dropped; sending it to a follower keeps
// those cold reads, and the cache they evict, off the leader that the
// producers write through.
//
//   - On the leader: far behind and slaveReadEnable, the subscription
//     group's whichBrokerWhenConsumeSlowly (default 1), as
//     PullMessageProcessor; else 0.
//   - On a follower: far behind and slaveReadEnable, this node's own id
//     in the route (stay); else 0 — once caught up the consumer returns
//     to the leader, whose page cache holds the tail.
//
// A suggestion names only an id the group's route can hold; when this
// node cannot tell its own (no leader known), it says 0. Every node serves
// pulls whatever it suggests: a follower holds only committed entries,
// at the same queue and commit offsets as the leader.

import (
	"math"
	"slices"

	"github.com/raftmq/raftmq/broker/meta"
)

// followerReads decides the suggestWhichBrokerId of a pull's answer.
type followerReads struct {
	rep      *replica
	meta     *meta.State
	settings *runtimeSettings // slaveReadEnable, accessMessageInMemoryMax*
	memory   int64            // physicalMemory(); 0 unknown
}

// threshold is how many commitlog bytes after a pull's last message make
// its consumer far behind: accessMessageInMemoryMaxBytes when set, else
// accessMessageInMemoryMaxRatio percent of memory (never, memory unknown).
func (f *followerReads) threshold(v *settingValues) int64 {
	if v.memBytes > 0 {
		return v.memBytes
	}
	if f.memory <= 0 {
		return math.MaxInt64
	}
	return int64(float64(f.memory) * float64(v.memRatio) / 100)
}

// suggest is the brokerId to answer a pull of group that ended behind
// bytes before the log's end.
func (f *followerReads) suggest(group string, behind int64) int64 {
	v := f.settings.get()
	if !v.slaveRead || behind <= f.threshold(v) {
		return 0
	}
	if f.rep.isLeader() {
		id := int64(1) // RocketMQ's default whichBrokerWhenConsumeSlowly
		if g, ok := f.meta.SubscriptionGroup(group); ok {
			id = g.WhichBrokerWhenConsumeSlowly
		}
		if id < 1 || id >= int64(len(f.rep.peers)) {
			return 0 // no follower of the group can have that id
		}
		return id
	}
	_, leader := f.rep.node.Leader()
	return routeID(f.rep.peers, f.rep.self, leader)
}

// routeID is self's brokerId in the name servers' routes while leader
// leads: namesrv lists the leader as 0 and the other registered nodes,
// sorted by address, as 1..n. 0 when self leads or no leader is known.
// It assumes every peer is registered; with a follower missing from the
// route it may name an id the route lacks, which clients treat as the
// leader (raftmq's SDK) or as the next id (RocketMQ's).
func routeID(peers []Peer, self Peer, leader string) int64 {
	if leader == "" || leader == self.ID {
		return 0
	}
	var others []string
	for _, p := range peers {
		if p.ID != leader {
			others = append(others, p.RemotingAddr)
		}
	}
	slices.Sort(others)
	i := slices.Index(others, self.RemotingAddr)
	if i < 0 || !slices.ContainsFunc(peers, func(p Peer) bool { return p.ID == leader }) {
		return 0
	}
	return int64(i + 1)
}
