package client

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// TestAdminTopicStatsAndScan: TopicStats' max offsets match what was sent
// per queue; ScanQueue returns exact offset ranges across pull batches
// and stops on its callback's error; ViewMessageByQueueOffset and
// QueryMessageByUniqueKey find the sent messages; ScanQueueByTime keeps
// exactly the store-time range.
func TestAdminTopicStatsAndScan(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	a := startAdmin(t, g)
	ctx := testCtx(t, 60*time.Second)
	const topic = "admin-scan"
	if _, err := a.CreateTopic(ctx, TopicConfig{Topic: topic, Queues: 2}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error { _, err := a.Route(ctx, topic); return err })
	p := startProducer(t, g)
	sent := map[MessageQueue][]SendResult{}
	bodies := map[MessageQueue][]string{}
	for i := range 80 {
		body := fmt.Sprintf("scan-%02d", i)
		res, err := p.Send(ctx, newMsg(topic, body))
		if err != nil {
			t.Fatal(err)
		}
		sent[res.Queue] = append(sent[res.Queue], res)
		bodies[res.Queue] = append(bodies[res.Queue], body)
	}

	// A send is acknowledged once a majority stored it; the leader's
	// queues show it once the leader applied it, a moment later.
	var stats []TopicQueueStats
	g.Eventually(10*time.Second, func() error {
		var err error
		stats, err = a.TopicStats(ctx, topic)
		if err != nil || len(stats) != 2 {
			return fmt.Errorf("stats: %+v %v", stats, err)
		}
		for _, s := range stats {
			if s.MinOffset != 0 || s.MaxOffset != int64(len(sent[s.Queue])) || (s.MaxOffset > 0 && s.LastUpdateTimestamp == 0) {
				return fmt.Errorf("stats of %s: %+v, sent %d", s.Queue, s, len(sent[s.Queue]))
			}
		}
		return nil
	})
	if _, err := a.TopicStats(ctx, "admin-no-such-topic"); !errors.Is(err, ErrNoRoute) {
		t.Errorf("stats of an unknown topic: %v", err)
	}

	q := stats[0].Queue
	if len(sent[q]) < scanBatch+5 { // the scans below must cross a pull batch
		t.Fatalf("queue %s got only %d messages", q, len(sent[q]))
	}
	scanned := func(begin, end int64) []string {
		var out []string
		err := a.ScanQueue(ctx, q, begin, end, func(m *message.MessageExt) error {
			if m.QueueOffset != begin+int64(len(out)) {
				return fmt.Errorf("offset %d after %d messages from %d", m.QueueOffset, len(out), begin)
			}
			out = append(out, string(m.Body))
			return nil
		})
		if err != nil {
			t.Fatalf("scan [%d,%d): %v", begin, end, err)
		}
		return out
	}
	if got := scanned(0, -1); !slices.Equal(got, bodies[q]) {
		t.Fatalf("scan all of %s: %v, sent %v", q, got, bodies[q])
	}
	if got := scanned(3, 38); !slices.Equal(got, bodies[q][3:38]) {
		t.Fatalf("scan [3,38): %v", got)
	}
	if got := scanned(int64(len(sent[q])), -1); len(got) != 0 {
		t.Fatalf("scan past the end: %v", got)
	}
	stop := errors.New("stop")
	calls := 0
	err := a.ScanQueue(ctx, q, 0, -1, func(*message.MessageExt) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 3 {
		t.Fatalf("stopped scan: %v after %d calls", err, calls)
	}

	res := sent[q][7]
	m, err := a.ViewMessageByQueueOffset(ctx, q, 7)
	if err != nil || string(m.Body) != bodies[q][7] || m.UniqKey() != res.MsgID {
		t.Fatalf("view offset 7: %v %v", m, err)
	}
	if _, err := a.ViewMessageByQueueOffset(ctx, q, int64(len(sent[q])+3)); !errors.Is(err, ErrMessageNotFound) {
		t.Fatalf("view past the end: %v", err)
	}

	found, err := a.QueryMessageByUniqueKey(ctx, topic, res.MsgID, time.Now().Add(-time.Hour), time.Time{})
	if err != nil || len(found) != 1 || string(found[0].Body) != bodies[q][7] || found[0].MsgID() != res.OffsetMsgID {
		t.Fatalf("unique key query: %v %v", found, err)
	}
	found, err = a.QueryMessageByUniqueKey(ctx, topic, res.MsgID, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))
	if err != nil || len(found) != 0 {
		t.Fatalf("unique key query before the send: %v %v", found, err)
	}
	if _, err := a.QueryMessageByUniqueKey(ctx, topic, res.MsgID, time.Now(), time.Now().Add(-time.Hour)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("end before begin: %v", err)
	}

	var all []*message.MessageExt
	if err := a.ScanQueue(ctx, q, 0, -1, func(m *message.MessageExt) error { all = append(all, m); return nil }); err != nil {
		t.Fatal(err)
	}
	lo, hi := time.UnixMilli(all[10].StoreTimestamp), time.UnixMilli(all[20].StoreTimestamp)
	var want, got []string
	for _, m := range all {
		if m.StoreTimestamp >= lo.UnixMilli() && m.StoreTimestamp <= hi.UnixMilli() {
			want = append(want, string(m.Body))
		}
	}
	if err := a.ScanQueueByTime(ctx, q, lo, hi, func(m *message.MessageExt) error { got = append(got, string(m.Body)); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || len(want) < 11 {
		t.Fatalf("scan by time [%v,%v]: %v, want %v", lo, hi, got, want)
	}
}

// TestAdminSetTopicPerm: SetTopicPerm changes only the permission, the
// queue counts and order flag stay (and ExtendTopic keeps the order flag);
// an invalid perm is refused before anything is sent.
func TestAdminSetTopicPerm(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	a := startAdmin(t, g)
	ctx := testCtx(t, 60*time.Second)
	const topic = "admin-perm"
	if _, err := a.CreateTopic(ctx, TopicConfig{Topic: topic, Queues: 5, Order: true}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error { _, err := a.Route(ctx, topic); return err })
	for _, perm := range []int{4, 2, 6} {
		placed, err := a.SetTopicPerm(ctx, topic, perm)
		if err != nil || len(placed) != 1 || placed[0].BrokerName != "broker-a" {
			t.Fatalf("perm %d: %v %v", perm, placed, err)
		}
		rd, err := a.Route(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		qd := rd.QueueDatas[0]
		if qd.Perm != int32(perm) || qd.ReadQueueNums != 5 || qd.WriteQueueNums != 5 {
			t.Fatalf("route after perm %d: %+v", perm, qd)
		}
		var w protocol.TopicConfigWrapper
		if err := a.groupJSON(ctx, rd.BrokerDatas[0], remoting.ReqGetAllTopicConfig, &w); err != nil {
			t.Fatal(err)
		}
		if tc := w.TopicConfigTable[topic]; tc.Perm != int32(perm) || !tc.Order || tc.ReadQueueNums != 5 {
			t.Fatalf("topic config after perm %d: %+v", perm, tc)
		}
	}
	// ExtendTopic copies the order flag too (the route has none).
	if _, err := a.ExtendTopic(ctx, topic, "broker-a"); err != nil {
		t.Fatal(err)
	}
	rd, err := a.Route(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if tc, err := a.topicConfig(ctx, rd.BrokerDatas[0], topic); err != nil || !tc.Order || tc.ReadQueueNums != 5 || tc.Perm != 6 {
		t.Fatalf("topic config after ExtendTopic: %+v %v", tc, err)
	}
	for _, bad := range []int{0, 1, 3, 5, 7, 8} {
		if _, err := a.SetTopicPerm(ctx, topic, bad); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("perm %d: %v", bad, err)
		}
	}
	if _, err := a.SetTopicPerm(ctx, "admin-no-such-topic", 6); !errors.Is(err, ErrNoRoute) {
		t.Errorf("perm of an unknown topic: %v", err)
	}
}
