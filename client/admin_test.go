package client

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
)

func startAdmin(t *testing.T, g *brokertest.Group) *Admin {
	t.Helper()
	a, err := NewAdmin(WithNameServers(g.NSAddr), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// TestAdmin walks the admin API over one group: topics, cluster and
// runtime info, offsets, lookups, and a view by id after the store host
// stopped.
func TestAdmin(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	a := startAdmin(t, g)
	ctx := testCtx(t, 60*time.Second)
	const topic = "admin-topic"

	placed, err := a.CreateTopic(ctx, TopicConfig{Topic: topic, Queues: 4})
	if err != nil || len(placed) != 1 || placed[0].BrokerName != "broker-a" {
		t.Fatalf("create: %v %v", placed, err)
	}
	g.Eventually(10*time.Second, func() error {
		rd, err := a.Route(ctx, topic)
		if err != nil {
			return err
		}
		if len(rd.QueueDatas) != 1 || rd.QueueDatas[0].WriteQueueNums != 4 || len(rd.BrokerDatas[0].BrokerAddrs) != 3 {
			return fmt.Errorf("route %+v", rd)
		}
		return nil
	})
	topics, err := a.ListTopics(ctx)
	if err != nil || !slices.Contains(topics, topic) {
		t.Fatalf("list: %v %v", topics, err)
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil || len(ci.BrokerAddrTable["broker-a"].BrokerAddrs) != 3 {
		t.Fatalf("cluster info: %+v %v", ci, err)
	}
	leaders := 0
	for _, addr := range ci.BrokerAddrTable["broker-a"].BrokerAddrs {
		table, err := a.BrokerRuntime(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		if table["raftState"] == "Leader" {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("%d nodes report Leader", leaders)
	}

	t.Run("Offsets", func(t *testing.T) { testAdminOffsets(t, g, a, topic) })
	t.Run("Lookups", func(t *testing.T) { testAdminLookups(t, g, a, topic) })

	if _, err := a.DeleteTopic(ctx, topic, ""); err != nil {
		t.Fatal(err)
	}
	g.Eventually(10*time.Second, func() error {
		if _, err := a.Route(ctx, topic); !errors.Is(err, ErrNoRoute) {
			return fmt.Errorf("route after delete: %v", err)
		}
		topics, err := a.ListTopics(ctx)
		if err != nil || slices.Contains(topics, topic) {
			return fmt.Errorf("list after delete: %v %v", topics, err)
		}
		return nil
	})
}

func testAdminOffsets(t *testing.T, g *brokertest.Group, a *Admin, topic string) {
	ctx := testCtx(t, 30*time.Second)
	p := startProducer(t, g)
	sendN := func(n int, tag string) []SendResult {
		var out []SendResult
		for i := range n {
			res, err := p.Send(ctx, newMsg(topic, fmt.Sprintf("%s-%d", tag, i)))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, res)
		}
		return out
	}
	first := sendN(8, "before")
	mark := time.UnixMilli(time.Now().UnixMilli() + 1)
	for !time.Now().After(mark) {
		time.Sleep(time.Millisecond)
	}
	second := sendN(8, "after")

	const group = "cg-admin"
	q0 := first[0].Queue
	if err := a.UpdateConsumerOffset(ctx, group, q0, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		prog, err := a.ConsumerGroupProgress(ctx, group)
		if err != nil {
			return err
		}
		for _, pr := range prog {
			if pr.Queue == q0 {
				if pr.ConsumerOffset != 1 || pr.Lag != pr.BrokerOffset-1 || pr.BrokerOffset < 2 {
					return fmt.Errorf("progress %+v", pr)
				}
				return nil
			}
		}
		return fmt.Errorf("progress lacks %s: %+v", q0, prog)
	})

	want := map[MessageQueue]int64{}
	for _, r := range append(first, second...) {
		want[r.Queue] = max(want[r.Queue], r.QueueOffset+1)
	}
	for _, r := range second {
		if cur := want[r.Queue]; r.QueueOffset < cur {
			want[r.Queue] = r.QueueOffset
		}
	}
	got, err := a.ResetOffsetByTimestamp(ctx, group, topic, mark)
	if err != nil {
		t.Fatal(err)
	}
	for q, off := range want {
		if got[q] != off {
			t.Fatalf("reset %s to %d, want %d (all %v)", q, got[q], off, got)
		}
	}
	eventually(t, 10*time.Second, func() error {
		prog, err := a.ConsumerGroupProgress(ctx, group, topic)
		if err != nil {
			return err
		}
		for _, pr := range prog {
			if pr.ConsumerOffset != got[pr.Queue] {
				return fmt.Errorf("after reset %s at %d, want %d", pr.Queue, pr.ConsumerOffset, got[pr.Queue])
			}
		}
		return nil
	})
}

func testAdminLookups(t *testing.T, g *brokertest.Group, a *Admin, topic string) {
	ctx := testCtx(t, 30*time.Second)
	p := startProducer(t, g)
	var needles []SendResult
	for i := range 6 {
		m := newMsg(topic, fmt.Sprintf("lookup-%d", i))
		if i%3 == 0 {
			m.SetKeys([]string{"needle", fmt.Sprintf("n%d", i)})
		} else {
			m.SetKeys([]string{"needles"})
		}
		res, err := p.Send(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			needles = append(needles, res)
		}
	}
	eventually(t, 10*time.Second, func() error {
		found, err := a.QueryMessageByKey(ctx, topic, "needle", time.Now().Add(-time.Hour), time.Time{}, 0)
		if err != nil {
			return err
		}
		var bodies []string
		for _, m := range found {
			bodies = append(bodies, string(m.Body))
		}
		slices.Sort(bodies)
		if !slices.Equal(bodies, []string{"lookup-0", "lookup-3"}) {
			return fmt.Errorf("query by key found %q", bodies)
		}
		return nil
	})
	big := make([]byte, 6000)
	for i := range big {
		big[i] = byte('a' + i%7)
	}
	res, err := p.Send(ctx, &message.Message{Topic: topic, Body: big})
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.ViewMessageByID(ctx, res.OffsetMsgID)
	if err != nil || string(m.Body) != string(big) || m.UniqKey() != res.MsgID {
		t.Fatalf("view compressed message: %v", err)
	}
	if _, err := a.ViewMessageByID(ctx, "not-an-id"); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("view bad id: %v", err)
	}
	// The store host stops: a group mate serves the same commit offset.
	leader := g.WaitLeader(10 * time.Second)
	g.StopNode(leader)
	g.WaitLeader(10 * time.Second)
	m, err = a.ViewMessageByID(ctx, needles[1].OffsetMsgID)
	if err != nil || string(m.Body) != "lookup-3" {
		t.Fatalf("view after the store host stopped: %v", err)
	}
}
