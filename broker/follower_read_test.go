package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// followerReadBytes is the far-behind threshold of the follower-read
// tests: a few dozen of their 1000-byte messages.
const followerReadBytes = 16 << 10

// routeAddrs waits until the name server lists all of g's nodes for topic
// and returns the route's brokerId → address.
func routeAddrs(t *testing.T, g *brokertest.Group, topic string) map[int64]string {
	t.Helper()
	var addrs map[int64]string
	g.Eventually(10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := g.Client.Invoke(ctx, g.NSAddr, remoting.NewRequest(remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if err != nil {
			return err
		}
		var rd protocol.TopicRouteData
		if err := json.Unmarshal(resp.Body, &rd); err != nil || len(rd.BrokerDatas) != 1 {
			return fmt.Errorf("route of %s: %d %s", topic, resp.Code, resp.Body)
		}
		addrs = rd.BrokerDatas[0].BrokerAddrs
		if len(addrs) != g.Len() || addrs[0] != g.Addr(g.WaitLeader(5*time.Second)) {
			return fmt.Errorf("route lists %v", addrs)
		}
		return nil
	})
	return addrs
}

// nodeAt is the index of the node whose address is addr.
func nodeAt(t *testing.T, g *brokertest.Group, addr string) int {
	t.Helper()
	for i := range g.Len() {
		if g.Addr(i) == addr {
			return i
		}
	}
	t.Fatalf("no node at %s", addr)
	return -1
}

// suggested pulls max messages of topic's queue 0 from offset at node i
// for group and returns the answer's code, suggestWhichBrokerId and body.
func suggested(t *testing.T, g *brokertest.Group, i int, group, topic string, offset int64, max int) (int16, string, []byte) {
	t.Helper()
	resp := g.Invoke(i, pullReq(pullArgs{group: group, topic: topic, offset: offset, max: max}))
	return resp.Code, resp.ExtFields["suggestWhichBrokerId"], resp.Body
}

// TestPullSuggestsFollower: with a 16 KiB threshold, a pull far behind is
// pointed at a follower — by the leader at the group's
// whichBrokerWhenConsumeSlowly, by a follower at itself — and a pull
// within the threshold, at the end of the queue, or with slaveReadEnable
// off is pointed at the leader (0). Followers answer the same records as
// the leader.
func TestPullSuggestsFollower(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{Configure: func(_ int, c *broker.Config) {
		c.AccessMessageInMemoryMaxBytes = followerReadBytes
	}})
	leader := g.WaitLeader(5 * time.Second)
	const topic, n = "FollowerRead", 100
	createTopic(t, g, topic, 1)
	body := strings.Repeat("x", 1000)
	for range n {
		send(t, g, leader, topic, 0, "", body)
	}
	g.Eventually(10*time.Second, func() error {
		for i := range g.Len() {
			if got := g.Broker(i).Store().MaxOffset(topic, 0); got != n {
				return fmt.Errorf("node %d has %d messages", i, got)
			}
		}
		return nil
	})
	addrs := routeAddrs(t, g, topic)
	f1, f2 := nodeAt(t, g, addrs[1]), nodeAt(t, g, addrs[2])

	// Far behind: the first 8 of 100 KB leave ~90 KB after them.
	code, id, far := suggested(t, g, leader, "cg", topic, 0, 8)
	if code != remoting.ResSuccess || id != "1" {
		t.Fatalf("leader, far behind: code %d suggest %q, want 0 and 1", code, id)
	}
	for _, c := range []struct {
		node int
		want string
	}{{f1, "1"}, {f2, "2"}} {
		code, id, got := suggested(t, g, c.node, "cg", topic, 0, 8)
		if code != remoting.ResSuccess || id != c.want || !bytes.Equal(got, far) {
			t.Fatalf("follower id %s, far behind: code %d suggest %q, same records %v", c.want, code, id, bytes.Equal(got, far))
		}
	}
	// Caught up: the last 10 messages leave ~1 KB; the end leaves none.
	for _, i := range []int{leader, f1, f2} {
		if code, id, _ := suggested(t, g, i, "cg", topic, n-10, 32); code != remoting.ResSuccess || id != "0" {
			t.Fatalf("node %d, caught up: code %d suggest %q, want 0 and 0", i, code, id)
		}
		if code, id, _ := suggested(t, g, i, "cg", topic, n, 32); code != remoting.ResPullNotFound || id != "0" {
			t.Fatalf("node %d, at the end: code %d suggest %q, want %d and 0", i, code, id, remoting.ResPullNotFound)
		}
	}

	// The group's whichBrokerWhenConsumeSlowly picks the follower.
	mustSucceed(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqUpdateAndCreateSubscriptionGroup, nil,
		[]byte(`{"groupName":"slow2","whichBrokerWhenConsumeSlowly":2}`))), "create group slow2")
	if _, id, _ := suggested(t, g, leader, "slow2", topic, 0, 8); id != "2" {
		t.Fatalf("group slow2 far behind: suggest %q, want 2", id)
	}

	// slaveReadEnable=false, set for the group at run time: always 0,
	// and a follower still answers.
	mustSucceed(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqUpdateBrokerConfig, nil, []byte("slaveReadEnable=false\n"))), "slaveReadEnable=false")
	g.Eventually(5*time.Second, func() error {
		for _, i := range []int{leader, f1, f2} {
			if code, id, _ := suggested(t, g, i, "cg", topic, 0, 8); code != remoting.ResSuccess || id != "0" {
				return fmt.Errorf("node %d with slaveReadEnable=false: code %d suggest %q", i, code, id)
			}
		}
		return nil
	})
	cfg := g.Invoke(f1, remoting.NewRequest(remoting.ReqGetBrokerConfig, nil, nil))
	if want := "accessMessageInMemoryMaxBytes=" + strconv.Itoa(followerReadBytes); !strings.Contains(string(cfg.Body), want) ||
		!strings.Contains(string(cfg.Body), "slaveReadEnable=false") {
		t.Fatalf("GET_BROKER_CONFIG lacks %s or slaveReadEnable=false:\n%s", want, cfg.Body)
	}
}
