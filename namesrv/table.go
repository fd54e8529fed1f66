package namesrv

import (
	"slices"
	"sync"
	"time"

	"github.com/raftmq/raftmq/protocol"
)

// Registration is one REGISTER_BROKER request, decoded.
type Registration struct {
	Cluster    string
	BrokerName string
	BrokerAddr string
	// BrokerID is 0 for a group's Raft leader, anything else for a follower.
	BrokerID int64
	// RaftTerm is the leader's term; 0 from brokers that do not send it.
	RaftTerm uint64
	Topics   map[string]protocol.TopicConfig
	// ConnID identifies the connection the registration came on, so that
	// its closing can drop the broker at once.
	ConnID uint64
}

// group is one broker group (brokerName): a leader and its followers.
type group struct {
	cluster    string
	name       string
	leader     string // "" while no leader is known
	leaderTerm uint64
	followers  map[string]bool
	topics     map[string]protocol.TopicConfig
	hasTopics  bool
	// writeWiped: WIPE_WRITE_PERM_OF_BROKER took the group's write
	// permission away in its routes until ADD_WRITE_PERM_OF_BROKER.
	writeWiped bool
}

func (g *group) empty() bool { return g.leader == "" && len(g.followers) == 0 }

// live is what the table knows of one broker address.
type live struct {
	group      string
	lastUpdate time.Time
	connID     uint64
	connClosed bool
}

// Table is the name server's route registry. It is safe for concurrent use.
type Table struct {
	mu       sync.RWMutex
	groups   map[string]*group // by brokerName
	brokers  map[string]*live  // by broker address
	clusters map[string]map[string]bool
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{
		groups:   map[string]*group{},
		brokers:  map[string]*live{},
		clusters: map[string]map[string]bool{},
	}
}

// Register records r at time now and returns the group's leader address
// after it (which may differ from r.BrokerAddr when r was a stale leader).
func (t *Table) Register(r Registration, now time.Time) (leader string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[r.BrokerName]
	if g == nil {
		g = &group{name: r.BrokerName, followers: map[string]bool{}}
		t.groups[r.BrokerName] = g
	}
	t.moveCluster(g, r.Cluster)
	// An address can have moved between groups (re-deployed node).
	if l := t.brokers[r.BrokerAddr]; l != nil && l.group != r.BrokerName {
		t.removeLocked(r.BrokerAddr)
	}
	if r.BrokerID == 0 && (r.RaftTerm >= g.leaderTerm || g.leader == r.BrokerAddr) {
		t.setLeader(g, r.BrokerAddr, r.RaftTerm)
		g.topics, g.hasTopics = r.Topics, true
	} else {
		if g.leader == r.BrokerAddr {
			g.leader = ""
		}
		g.followers[r.BrokerAddr] = true
		if !g.hasTopics {
			g.topics, g.hasTopics = r.Topics, true
		}
	}
	t.brokers[r.BrokerAddr] = &live{group: r.BrokerName, lastUpdate: now, connID: r.ConnID}
	return g.leader
}

// setLeader makes addr the leader of g; the previous leader becomes a
// follower unless its connection is already gone, in which case it is dead
// and leaves the route.
func (t *Table) setLeader(g *group, addr string, term uint64) {
	if old := g.leader; old != "" && old != addr {
		if l := t.brokers[old]; l != nil && l.connClosed {
			delete(t.brokers, old)
		} else {
			g.followers[old] = true
		}
	}
	delete(g.followers, addr)
	g.leader, g.leaderTerm = addr, max(term, g.leaderTerm)
}

func (t *Table) moveCluster(g *group, cluster string) {
	if g.cluster == cluster {
		return
	}
	if names := t.clusters[g.cluster]; names != nil {
		delete(names, g.name)
		if len(names) == 0 {
			delete(t.clusters, g.cluster)
		}
	}
	g.cluster = cluster
	if t.clusters[cluster] == nil {
		t.clusters[cluster] = map[string]bool{}
	}
	t.clusters[cluster][g.name] = true
}

// Unregister removes a broker that is shutting down. A leader whose group
// still has followers stays listed as id 0 until a new leader registers or
// it times out, so the route never loses its id 0 during the election.
func (t *Table) Unregister(brokerName, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[brokerName]
	if g == nil {
		return
	}
	if g.leader == addr && len(g.followers) > 0 {
		if l := t.brokers[addr]; l != nil {
			l.connClosed = true
		}
		return
	}
	t.removeLocked(addr)
}

// ConnClosed drops the brokers that registered over connection id, except
// a leader, which is kept (as in Unregister) until it is replaced.
func (t *Table) ConnClosed(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for addr, l := range t.brokers {
		if l.connID != id {
			continue
		}
		if g := t.groups[l.group]; g != nil && g.leader == addr {
			l.connClosed = true
			continue
		}
		t.removeLocked(addr)
	}
}

// Evict removes every broker not heard from since now-timeout and returns
// their addresses.
func (t *Table) Evict(now time.Time, timeout time.Duration) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var gone []string
	for addr, l := range t.brokers {
		if now.Sub(l.lastUpdate) > timeout {
			gone = append(gone, addr)
		}
	}
	for _, addr := range gone {
		t.removeLocked(addr)
	}
	slices.Sort(gone)
	return gone
}

func (t *Table) removeLocked(addr string) {
	l := t.brokers[addr]
	delete(t.brokers, addr)
	if l == nil {
		return
	}
	g := t.groups[l.group]
	if g == nil {
		return
	}
	delete(g.followers, addr)
	if g.leader == addr {
		g.leader = ""
	}
	// A leader kept after its own unregistration (for the election's sake)
	// goes with its group's last follower: nobody is left to replace it.
	if g.leader != "" && len(g.followers) == 0 {
		if ll := t.brokers[g.leader]; ll != nil && ll.connClosed {
			t.removeLocked(g.leader)
			return
		}
	}
	if g.empty() {
		delete(t.groups, g.name)
		if names := t.clusters[g.cluster]; names != nil {
			delete(names, g.name)
			if len(names) == 0 {
				delete(t.clusters, g.cluster)
			}
		}
	}
}

// brokerData lists g's addresses: the leader as id 0 and the followers,
// sorted, as 1..n. With no leader known the first follower is listed as 0:
// every raftmq node forwards writes to the leader, and a route without id 0
// leaves RocketMQ clients unable to send at all.
func (g *group) brokerData() protocol.BrokerData {
	followers := make([]string, 0, len(g.followers))
	for a := range g.followers {
		followers = append(followers, a)
	}
	slices.Sort(followers)
	addrs := make(map[int64]string, len(followers)+1)
	next := int64(0)
	if g.leader != "" {
		addrs[0], next = g.leader, 1
	}
	for _, a := range followers {
		addrs[next] = a
		next++
	}
	return protocol.BrokerData{Cluster: g.cluster, BrokerName: g.name, BrokerAddrs: addrs}
}

// Route returns the route of topic, or false when no live group serves it.
func (t *Table) Route(topic string) (protocol.TopicRouteData, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	rd := protocol.TopicRouteData{QueueDatas: []protocol.QueueData{}, BrokerDatas: []protocol.BrokerData{}, FilterServerTable: map[string][]string{}}
	for _, name := range t.sortedGroupNames() {
		g := t.groups[name]
		tc, ok := g.topics[topic]
		if !ok {
			continue
		}
		perm := tc.Perm
		if g.writeWiped {
			perm &^= protocol.PermWrite
		}
		rd.QueueDatas = append(rd.QueueDatas, protocol.QueueData{
			BrokerName: name, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums,
			Perm: perm, TopicSysFlag: tc.TopicSysFlag,
		})
		rd.BrokerDatas = append(rd.BrokerDatas, g.brokerData())
	}
	return rd, len(rd.QueueDatas) > 0
}

func (t *Table) sortedGroupNames() []string {
	names := make([]string, 0, len(t.groups))
	for n := range t.groups {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ClusterInfo returns every group and cluster.
func (t *Table) ClusterInfo() protocol.ClusterInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ci := protocol.ClusterInfo{BrokerAddrTable: map[string]protocol.BrokerData{}, ClusterAddrTable: map[string][]string{}}
	for name, g := range t.groups {
		ci.BrokerAddrTable[name] = g.brokerData()
	}
	for c, names := range t.clusters {
		list := make([]string, 0, len(names))
		for n := range names {
			list = append(list, n)
		}
		slices.Sort(list)
		ci.ClusterAddrTable[c] = list
	}
	return ci
}

// Topics returns the names of all topics, sorted; with cluster != "" only
// those served by a group of that cluster.
func (t *Table) Topics(cluster string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	set := map[string]bool{}
	for _, g := range t.groups {
		if cluster != "" && g.cluster != cluster {
			continue
		}
		for topic := range g.topics {
			set[topic] = true
		}
	}
	out := make([]string, 0, len(set))
	for topic := range set {
		out = append(out, topic)
	}
	slices.Sort(out)
	return out
}

// DeleteTopic forgets topic on every group (until a broker registers it
// again).
func (t *Table) DeleteTopic(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, g := range t.groups {
		if _, ok := g.topics[topic]; ok {
			topics := make(map[string]protocol.TopicConfig, len(g.topics))
			for k, v := range g.topics {
				if k != topic {
					topics[k] = v
				}
			}
			g.topics = topics
		}
	}
}

// SetWritable takes a group's write permission out of its routes
// (writable false, WIPE_WRITE_PERM_OF_BROKER) or gives it back; it returns
// how many of the group's topics were writable before a wipe, or are
// writable after an add, and false for an unknown group.
func (t *Table) SetWritable(brokerName string, writable bool) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[brokerName]
	if g == nil {
		return 0, false
	}
	n := 0
	for _, tc := range g.topics {
		if protocol.Writable(tc.Perm) {
			n++
		}
	}
	g.writeWiped = !writable
	return n, true
}
