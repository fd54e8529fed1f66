package namesrv

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/raftmq/raftmq/protocol"
)

var t0 = time.Unix(1_700_000_000, 0)

func topics(names ...string) map[string]protocol.TopicConfig {
	m := map[string]protocol.TopicConfig{}
	for _, n := range names {
		m[n] = protocol.TopicConfig{TopicName: n, ReadQueueNums: 4, WriteQueueNums: 4, Perm: protocol.PermRead | protocol.PermWrite}
	}
	return m
}

func reg(addr string, id int64, term uint64, conn uint64) Registration {
	return Registration{Cluster: "c1", BrokerName: "broker-a", BrokerAddr: addr, BrokerID: id, RaftTerm: term,
		Topics: topics("T"), ConnID: conn}
}

func addrsOf(t *testing.T, tb *Table) map[int64]string {
	t.Helper()
	rd, ok := tb.Route("T")
	if !ok {
		t.Fatal("no route for T")
	}
	if len(rd.BrokerDatas) != 1 {
		t.Fatalf("broker datas = %+v", rd.BrokerDatas)
	}
	return rd.BrokerDatas[0].BrokerAddrs
}

func wantAddrs(t *testing.T, tb *Table, want map[int64]string) {
	t.Helper()
	if got := addrsOf(t, tb); !maps.Equal(got, want) {
		t.Fatalf("brokerAddrs = %v, want %v", got, want)
	}
}

func TestRouteLeaderIsZeroFollowersNumbered(t *testing.T) {
	tb := NewTable()
	tb.Register(reg("n3:10911", 3, 0, 3), t0)
	tb.Register(reg("n1:10911", 0, 5, 1), t0)
	tb.Register(reg("n2:10911", 2, 0, 2), t0)
	wantAddrs(t, tb, map[int64]string{0: "n1:10911", 1: "n2:10911", 2: "n3:10911"})
}

func TestLeaderChangeMovesOldLeaderToFollower(t *testing.T) {
	tb := NewTable()
	tb.Register(reg("n1", 0, 5, 1), t0)
	tb.Register(reg("n2", 1, 0, 2), t0)
	tb.Register(reg("n3", 1, 0, 3), t0)
	if got := tb.Register(reg("n2", 0, 6, 2), t0); got != "n2" {
		t.Fatalf("leader after term-6 registration = %q", got)
	}
	wantAddrs(t, tb, map[int64]string{0: "n2", 1: "n1", 2: "n3"})

	// A late registration of the deposed leader, still claiming term 5,
	// must not take id 0 back.
	if got := tb.Register(reg("n1", 0, 5, 1), t0); got != "n2" {
		t.Fatalf("stale registration changed leader to %q", got)
	}
	wantAddrs(t, tb, map[int64]string{0: "n2", 1: "n1", 2: "n3"})
}

func TestDeadLeaderKeptUntilReplacedThenDropped(t *testing.T) {
	tb := NewTable()
	tb.Register(reg("n1", 0, 5, 1), t0)
	tb.Register(reg("n2", 1, 0, 2), t0)
	tb.Register(reg("n3", 2, 0, 3), t0)

	tb.ConnClosed(1) // the leader died
	wantAddrs(t, tb, map[int64]string{0: "n1", 1: "n2", 2: "n3"})

	tb.ConnClosed(3) // a follower died: gone at once
	wantAddrs(t, tb, map[int64]string{0: "n1", 1: "n2"})

	tb.Register(reg("n2", 0, 6, 2), t0) // new leader; dead n1 leaves
	wantAddrs(t, tb, map[int64]string{0: "n2"})
}

func TestUnregisterLeaderWithFollowersKeepsIDZero(t *testing.T) {
	tb := NewTable()
	tb.Register(reg("n1", 0, 1, 1), t0)
	tb.Register(reg("n2", 1, 0, 2), t0)
	tb.Unregister("broker-a", "n1")
	wantAddrs(t, tb, map[int64]string{0: "n1", 1: "n2"})
	// The last follower leaves: nobody can replace the unregistered
	// leader, so the group leaves the routes with it (a group shut down).
	tb.Unregister("broker-a", "n2")
	if _, ok := tb.Route("T"); ok {
		t.Fatal("route survives the last member's unregistration")
	}
}

func TestNoLeaderPublishesAFollowerAsZero(t *testing.T) {
	tb := NewTable()
	tb.Register(reg("n2", 1, 0, 2), t0)
	tb.Register(reg("n3", 2, 0, 3), t0)
	wantAddrs(t, tb, map[int64]string{0: "n2", 1: "n3"})
}

func TestEviction(t *testing.T) {
	tb := NewTable()
	tb.Register(reg("n1", 0, 1, 1), t0)
	tb.Register(reg("n2", 1, 0, 2), t0.Add(100*time.Second))
	gone := tb.Evict(t0.Add(121*time.Second), 120*time.Second)
	if len(gone) != 1 || gone[0] != "n1" {
		t.Fatalf("evicted %v, want [n1]", gone)
	}
	wantAddrs(t, tb, map[int64]string{0: "n2"})
	if gone := tb.Evict(t0.Add(300*time.Second), 120*time.Second); len(gone) != 1 {
		t.Fatalf("second eviction = %v", gone)
	}
	if _, ok := tb.Route("T"); ok {
		t.Fatal("route of an evicted group")
	}
	if ci := tb.ClusterInfo(); len(ci.BrokerAddrTable) != 0 || len(ci.ClusterAddrTable) != 0 {
		t.Fatalf("cluster info after eviction = %+v", ci)
	}
}

func TestRouteJSONIsCompactWithBrokerAddrs(t *testing.T) {
	tb := NewTable()
	tb.Register(reg("127.0.0.1:10911", 0, 1, 1), t0)
	tb.Register(reg("127.0.0.1:10912", 1, 0, 2), t0)
	rd, _ := tb.Route("T")
	b, err := json.Marshal(rd)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"orderTopicConf":"","queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],` +
		`"brokerDatas":[{"cluster":"c1","brokerName":"broker-a","brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10912"}}],"filterServerTable":{}}`
	if string(b) != want {
		t.Fatalf("route JSON\n got %s\nwant %s", b, want)
	}
}

func TestTopicsClustersAndDelete(t *testing.T) {
	tb := NewTable()
	tb.Register(Registration{Cluster: "c1", BrokerName: "a", BrokerAddr: "a1", Topics: topics("T1", "T2")}, t0)
	tb.Register(Registration{Cluster: "c2", BrokerName: "b", BrokerAddr: "b1", Topics: topics("T2", "T3")}, t0)
	if got := tb.Topics(""); len(got) != 3 || got[0] != "T1" || got[2] != "T3" {
		t.Fatalf("all topics = %v", got)
	}
	if got := tb.Topics("c2"); len(got) != 2 || got[0] != "T2" || got[1] != "T3" {
		t.Fatalf("c2 topics = %v", got)
	}
	rd, _ := tb.Route("T2")
	if len(rd.QueueDatas) != 2 || rd.QueueDatas[0].BrokerName != "a" || rd.QueueDatas[1].BrokerName != "b" {
		t.Fatalf("T2 route = %+v", rd)
	}
	ci := tb.ClusterInfo()
	if len(ci.ClusterAddrTable["c1"]) != 1 || ci.BrokerAddrTable["b"].Cluster != "c2" {
		t.Fatalf("cluster info = %+v", ci)
	}
	tb.DeleteTopic("T2")
	if _, ok := tb.Route("T2"); ok {
		t.Fatal("deleted topic still routed")
	}
	if _, ok := tb.Route("T1"); !ok {
		t.Fatal("delete removed another topic")
	}
}

func TestLeaderRegistrationReplacesTopics(t *testing.T) {
	tb := NewTable()
	tb.Register(Registration{Cluster: "c", BrokerName: "a", BrokerAddr: "n1", Topics: topics("old")}, t0)
	tb.Register(Registration{Cluster: "c", BrokerName: "a", BrokerAddr: "n2", BrokerID: 1, Topics: topics("ignored")}, t0)
	if _, ok := tb.Route("ignored"); ok {
		t.Fatal("a follower's topic table replaced the leader's")
	}
	tb.Register(Registration{Cluster: "c", BrokerName: "a", BrokerAddr: "n1", Topics: topics("new")}, t0)
	if _, ok := tb.Route("old"); ok {
		t.Fatal("topic dropped by the leader is still routed")
	}
	if _, ok := tb.Route("new"); !ok {
		t.Fatal("leader's new topic not routed")
	}
}

// TestSetWritable: a wiped group's routes lose the write bit, whatever it
// registers, until its write permission is added back; an unknown group
// is reported.
func TestSetWritable(t *testing.T) {
	tb := NewTable()
	tb.Register(Registration{Cluster: "c", BrokerName: "a", BrokerAddr: "1.1.1.1:1", BrokerID: 0,
		Topics: map[string]protocol.TopicConfig{"T": {TopicName: "T", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}}}, time.Now())
	if n, ok := tb.SetWritable("a", false); !ok || n != 1 {
		t.Fatalf("wipe: %d %v", n, ok)
	}
	tb.Register(Registration{Cluster: "c", BrokerName: "a", BrokerAddr: "1.1.1.1:1", BrokerID: 0,
		Topics: map[string]protocol.TopicConfig{"T": {TopicName: "T", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}}}, time.Now())
	if rd, _ := tb.Route("T"); rd.QueueDatas[0].Perm != protocol.PermRead {
		t.Fatalf("wiped route perm %d", rd.QueueDatas[0].Perm)
	}
	tb.SetWritable("a", true)
	if rd, _ := tb.Route("T"); rd.QueueDatas[0].Perm != 6 {
		t.Fatalf("route perm after add %d", rd.QueueDatas[0].Perm)
	}
	if _, ok := tb.SetWritable("nope", false); ok {
		t.Fatal("an unknown group was wiped")
	}
}

// TestWholeGroupUnregisters: a group whose leader unregisters first
// (kept, for its followers' election) leaves the routes when its last
// follower unregisters too — a drained group shut down.
func TestWholeGroupUnregisters(t *testing.T) {
	tb := NewTable()
	topics := map[string]protocol.TopicConfig{"T": {TopicName: "T", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}
	tb.Register(Registration{Cluster: "c", BrokerName: "b", BrokerAddr: "l:1", BrokerID: 0, RaftTerm: 2, Topics: topics}, time.Now())
	tb.Register(Registration{Cluster: "c", BrokerName: "b", BrokerAddr: "f:1", BrokerID: 1, Topics: topics}, time.Now())
	tb.Register(Registration{Cluster: "c", BrokerName: "b", BrokerAddr: "f:2", BrokerID: 2, Topics: topics}, time.Now())
	tb.Unregister("b", "l:1")
	if _, ok := tb.Route("T"); !ok {
		t.Fatal("the route went with the leader while followers remain")
	}
	tb.Unregister("b", "f:1")
	tb.Unregister("b", "f:2")
	if rd, ok := tb.Route("T"); ok {
		t.Fatalf("the unregistered group is still routed: %+v", rd)
	}
	if ci := tb.ClusterInfo(); len(ci.BrokerAddrTable) != 0 {
		t.Fatalf("cluster info still lists %v", ci.BrokerAddrTable)
	}
}
