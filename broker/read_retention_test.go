package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/remoting"
)

// TestPullAfterRetention pulls a queue whose oldest messages commitlog
// retention deleted: the pull skips to the first stored message (as
// RocketMQ skips to the next commitlog file), and once the consumequeue
// start is corrected, offsets below it are PULL_OFFSET_MOVED and an
// unknown group's offset is QUERY_NOT_FOUND.
func TestPullAfterRetention(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{Configure: func(_ int, c *broker.Config) {
		rc := dledger.DefaultConfig()
		rc.SnapshotThreshold = 1 << 30 // only explicit snapshots
		c.Raft = &rc
		cl := &c.Store.CommitLog
		cl.Retention.FileReservedTime = time.Nanosecond
		cl.Retention.DiskUsage = func(string) (float64, error) { return 0.8, nil } // above warn: any hour
		cl.Retention.CheckInterval = 0
		cl.SegmentSize = 16 << 10
	}})
	leader := g.WaitLeader(5 * time.Second)
	const topic = "RetainedTopic"
	createTopic(t, g, topic, 1)
	body := strings.Repeat("x", 512)
	const n = 120
	for i := 0; i < n; i++ {
		send(t, g, leader, topic, 0, "", body)
	}
	b := g.Broker(leader)
	if err := b.Node().SnapshotNow(); err != nil {
		t.Fatal(err)
	}
	deleted, err := b.Store().Log().RunRetentionOnce(time.Now())
	if err != nil || deleted == 0 {
		t.Fatalf("retention deleted %d segments: %v", deleted, err)
	}

	resp := g.Invoke(leader, pullReq(pullArgs{topic: topic, offset: 0}))
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("pull over removed messages answered %d %q", resp.Code, resp.Remark)
	}
	msgs := expectPull(t, resp, remoting.ResSuccess, extInt(t, resp, "nextBeginOffset"))
	first := msgs[0].QueueOffset
	if first == 0 || first >= n || extInt(t, resp, "nextBeginOffset") != first+int64(len(msgs)) {
		t.Fatalf("first stored message at %d, %d messages, next %s", first, len(msgs), resp.ExtFields["nextBeginOffset"])
	}
	t.Logf("retention removed queue offsets [0,%d)", first)

	if err := b.CorrectMinOffsets(); err != nil {
		t.Fatal(err)
	}
	min := g.Invoke(leader, remoting.NewRequest(remoting.ReqGetMinOffset, map[string]string{"topic": topic, "queueId": "0"}, nil))
	if got := extInt(t, min, "offset"); got != first {
		t.Fatalf("min offset after correction %d, want %d", got, first)
	}
	expectPull(t, g.Invoke(leader, pullReq(pullArgs{topic: topic, offset: 1})), remoting.ResPullOffsetMoved, first)
	if resp := g.Invoke(leader, queryOffsetReq("fresh", topic, 0)); resp.Code != remoting.ResQueryNotFound {
		t.Fatalf("query of a fresh group after retention answered %d, want QUERY_NOT_FOUND", resp.Code)
	}
}
