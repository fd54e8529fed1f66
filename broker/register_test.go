package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// routeOf asks the group's name server for topic's route.
func routeOf(g *brokertest.Group, topic string) (leader string, followers int, queues int32, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := g.Client.Invoke(ctx, g.NSAddr, remoting.NewRequest(remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil {
		return "", 0, 0, err
	}
	if resp.Code != remoting.ResSuccess {
		return "", 0, 0, fmt.Errorf("route %s: code %d %q", topic, resp.Code, resp.Remark)
	}
	var rd struct {
		QueueDatas []struct {
			WriteQueueNums int32 `json:"writeQueueNums"`
		} `json:"queueDatas"`
		BrokerDatas []struct {
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	if err := json.Unmarshal(resp.Body, &rd); err != nil {
		return "", 0, 0, err
	}
	if len(rd.BrokerDatas) != 1 || len(rd.QueueDatas) != 1 {
		return "", 0, 0, fmt.Errorf("route %s: %s", topic, resp.Body)
	}
	addrs := rd.BrokerDatas[0].BrokerAddrs
	return addrs["0"], len(addrs) - 1, rd.QueueDatas[0].WriteQueueNums, nil
}

func TestRegistrationFollowsLeader(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{Configure: func(_ int, c *broker.Config) {
		c.RegisterInterval = time.Hour // only start, topic changes and leader changes register
	}})
	// TBW102 is routed as soon as the group registered at start.
	g.Eventually(5*time.Second, func() error {
		l, _, q, err := routeOf(g, protocol.DefaultTopic)
		if err != nil {
			return err
		}
		if l != g.Addr(leader) || q != 8 {
			return fmt.Errorf("TBW102 route leader %s with %d queues", l, q)
		}
		return nil
	})
	// A created topic is routed when the create returns (the leader
	// registers before answering), with the leader as id 0.
	createTopicAt(t, g, followerOf(g, leader), "Routed", 3, 6)
	l, _, q, err := routeOf(g, "Routed")
	if err != nil || l != g.Addr(leader) || q != 3 {
		t.Fatalf("route of Routed: leader %q (want %s), %d queues, %v", l, g.Addr(leader), q, err)
	}
	g.Eventually(5*time.Second, func() error {
		if _, f, _, err := routeOf(g, "Routed"); err != nil || f != 2 {
			return fmt.Errorf("%d followers in route (%v)", f, err)
		}
		return nil
	})
	// An auto-created topic is routed soon after its first send.
	mustSucceed(t, g.Invoke(leader, sendMsgReq("AutoRouted", 0, nil, []byte("x"))), "auto-create send")
	g.Eventually(3*time.Second, func() error {
		_, _, _, err := routeOf(g, "AutoRouted")
		return err
	})

	// The leader goes away: the new leader is id 0 within a few seconds.
	old := g.Addr(leader)
	g.StopNode(leader)
	start := time.Now()
	g.Eventually(5*time.Second, func() error {
		l, _, _, err := routeOf(g, "Routed")
		if err != nil {
			return err
		}
		nl := -1
		for i := 0; i < g.Len(); i++ {
			if b := g.Broker(i); b != nil && b.Node().IsLeader() {
				nl = i
			}
		}
		if l == old || nl < 0 || l != g.Addr(nl) {
			return fmt.Errorf("route id 0 is %s (old leader %s, new leader index %d)", l, old, nl)
		}
		return nil
	})
	t.Logf("route followed the new leader %v after the old one stopped", time.Since(start))
}
