package client

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/protocol"
)

// TestAdminGroupAcrossBrokerGroups: with two broker groups (broker-a and
// broker-b, one node each, one name server), the group admin calls cover
// both: a subscription group is created on and deleted from each, a
// client connected to both is listed once, consume stats and a reset
// cover the queues of both, and the reset's progress counts them.
func TestAdminGroupAcrossBrokerGroups(t *testing.T) {
	ga := brokertest.Start(t, brokertest.Options{Nodes: 1})
	brokertest.Start(t, brokertest.Options{Nodes: 1, Configure: func(_ int, c *broker.Config) {
		c.BrokerName, c.NameServers = "broker-b", []string{ga.NSAddr}
	}})
	a := startAdmin(t, ga)
	ctx := testCtx(t, 60*time.Second)
	const topic, group = "admin-two", "cg-admin-two"
	ga.Eventually(10*time.Second, func() error {
		ci, err := a.ClusterInfo(ctx)
		if err != nil {
			return err
		}
		if len(groups(ci, "", "")) != 2 {
			return fmt.Errorf("cluster info %+v", ci.BrokerAddrTable)
		}
		return nil
	})

	cfg := protocol.DefaultSubscriptionGroupConfig()
	cfg.GroupName, cfg.RetryMaxTimes = group, 5
	placed, err := a.CreateSubscriptionGroup(ctx, "", cfg)
	if err != nil || len(placed) != 2 || placed[0].BrokerName != "broker-a" || placed[1].BrokerName != "broker-b" {
		t.Fatalf("create subscription group: %+v %v", placed, err)
	}
	sgs, err := a.SubscriptionGroup(ctx, "", group)
	if err != nil || len(sgs) != 2 || sgs[0].Config.RetryMaxTimes != 5 || sgs[1].BrokerName != "broker-b" || sgs[1].Config.RetryMaxTimes != 5 {
		t.Fatalf("subscription group: %+v %v", sgs, err)
	}

	if placed, err := a.CreateTopic(ctx, TopicConfig{Topic: topic, Queues: 2}); err != nil || len(placed) != 2 {
		t.Fatalf("create topic: %+v %v", placed, err)
	}
	ga.Eventually(10*time.Second, func() error {
		rd, err := a.Route(ctx, topic)
		if err != nil {
			return err
		}
		if len(rd.QueueDatas) != 2 {
			return fmt.Errorf("route %+v", rd.QueueDatas)
		}
		return nil
	})
	p := startProducer(t, ga)
	// Round-robin over the 4 queues: every queue gets 5.
	sendN(t, p, topic, "two", 20, nil)
	c := newCollector()
	pc := startPush(t, ga, group, "c1", topic, "*", c.handler, WithConsumeFrom(ConsumeFromFirst()))
	c.waitDistinct(t, 20, 20*time.Second)

	cc, err := a.ConsumerConnections(ctx, group)
	if err != nil || len(cc.Connections) != 1 || cc.Connections[0].ClientID != pc.ClientID() {
		t.Fatalf("consumer connections (one client on two broker groups): %+v %v", cc, err)
	}
	pconns, err := a.ProducerConnections(ctx, "pg-test")
	if err != nil || len(pconns) != 1 || pconns[0].ClientID != p.ClientID() {
		t.Fatalf("producer connections: %+v %v", pconns, err)
	}

	ga.Eventually(20*time.Second, func() error {
		cs, err := a.ConsumeStats(ctx, group, topic)
		if err != nil {
			return err
		}
		brokers, stored := map[string]int{}, int64(0)
		for _, q := range cs.Queues {
			brokers[q.Queue.BrokerName]++
			stored += q.BrokerOffset
		}
		if len(cs.Queues) != 4 || brokers["broker-a"] != 2 || brokers["broker-b"] != 2 || stored != 20 || cs.Lag != 0 {
			return fmt.Errorf("consume stats %+v", cs)
		}
		return nil
	})

	var calls [][2]int
	offs, err := a.ResetOffset(ctx, OffsetReset{Group: group, Topic: topic,
		Progress: func(done, total int, _ string) { calls = append(calls, [2]int{done, total}) }})
	if err != nil || len(offs) != 4 {
		t.Fatalf("reset to earliest: %+v %v", offs, err)
	}
	for _, o := range offs {
		if o.Offset != 0 {
			t.Errorf("reset to earliest: %+v", o)
		}
	}
	if fmt.Sprint(calls) != "[[2 4] [4 4]]" {
		t.Errorf("progress calls %v, want [[2 4] [4 4]]", calls)
	}
	waitFor(t, 20*time.Second, "every message redelivered", func() bool {
		for _, n := range c.bodies() {
			if n < 2 {
				return false
			}
		}
		return true
	})

	placed, err = a.DeleteSubscriptionGroup(ctx, "", group)
	if err != nil || len(placed) != 2 {
		t.Fatalf("delete subscription group: %+v %v", placed, err)
	}
	if sgs, err := a.SubscriptionGroup(ctx, "", group); err != nil || len(sgs) != 0 {
		t.Fatalf("after delete: %+v %v", sgs, err)
	}
}
