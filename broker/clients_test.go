package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// consumerClient is a remoting client that records the
// NOTIFY_CONSUMER_IDS_CHANGED requests brokers send it.
type consumerClient struct {
	*remoting.Client
	id       string
	notified chan string
}

func newConsumerClient(t *testing.T, id string) *consumerClient {
	t.Helper()
	cl, err := remoting.NewClient(remoting.DefaultClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := &consumerClient{Client: cl, id: id, notified: make(chan string, 16)}
	cl.HandleFunc(remoting.ReqNotifyConsumerIDsChanged, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		c.notified <- req.ExtFields["consumerGroup"]
		return nil
	})
	t.Cleanup(func() { cl.Close() })
	return c
}

func (c *consumerClient) heartbeat(t *testing.T, g *brokertest.Group, i int, group, topic string) {
	t.Helper()
	resp := invokeOn(t, g, c.Client, i, remoting.NewRequest(remoting.ReqHeartBeat, nil, heartbeatBody(c.id, group, topic, "*")))
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("heartbeat of %s: %d %s", c.id, resp.Code, resp.Remark)
	}
}

// expectNotified waits for a notification of group.
func (c *consumerClient) expectNotified(t *testing.T, group string) {
	t.Helper()
	select {
	case got := <-c.notified:
		if got != group {
			t.Fatalf("%s notified for group %q, want %q", c.id, got, group)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s not notified of a change in %s", c.id, group)
	}
}

// consumerList is GET_CONSUMER_LIST_BY_GROUP's list through cl, or the
// error answer.
func consumerList(t *testing.T, g *brokertest.Group, cl *remoting.Client, i int, group string) ([]string, *remoting.Command) {
	t.Helper()
	resp := invokeOn(t, g, cl, i, remoting.NewRequest(remoting.ReqGetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil))
	if resp.Code != remoting.ResSuccess {
		return nil, resp
	}
	var body struct {
		ConsumerIDList []string `json:"consumerIdList"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatalf("consumer list body %q: %v", resp.Body, err)
	}
	return body.ConsumerIDList, nil
}

// TestHeartbeatCreatesRetryTopic checks pitfall 7: once the first
// heartbeat of a group is answered, its %RETRY% topic exists and has a
// route — whichever node was asked.
func TestHeartbeatCreatesRetryTopic(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	leader := g.WaitLeader(5 * time.Second)
	const topic = "HBTopic"
	createTopic(t, g, topic, 1)
	for _, node := range []int{leader, follower(g, leader)} {
		group := fmt.Sprintf("hbgroup%d", node)
		c := newConsumerClient(t, fmt.Sprintf("10.1.1.1@%d", node))
		c.heartbeat(t, g, node, group, topic)
		retry := protocol.RetryTopic(group)
		if _, ok := g.Broker(leader).Metadata().Topic(retry); !ok {
			t.Fatalf("heartbeat on node %d answered before %s existed", node, retry)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := g.Client.Invoke(ctx, g.NSAddr, remoting.NewRequest(remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": retry}, nil))
		cancel()
		if err != nil || resp.Code != remoting.ResSuccess {
			t.Fatalf("route of %s after the heartbeat on node %d: %v %v", retry, node, resp, err)
		}
		if expr, ok := g.Broker(node).ConsumerSubscription(group, topic); !ok || expr != "*" {
			t.Fatalf("node %d: subscription %q %v", node, expr, ok)
		}
	}
	bad := remoting.NewRequest(remoting.ReqHeartBeat, nil, []byte("{not json"))
	if resp := g.Invoke(leader, bad); resp.Code != remoting.ResSystemError || resp.Remark == "" {
		t.Fatalf("bad heartbeat body answered %d %q", resp.Code, resp.Remark)
	}
}

// TestConsumerGroupMembership covers the consumer list (with the caller)
// and NOTIFY_CONSUMER_IDS_CHANGED on join, connection close and
// unregistration.
func TestConsumerGroupMembership(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	leader := g.WaitLeader(5 * time.Second)
	const topic, group = "MemberTopic", "members"
	createTopic(t, g, topic, 2)
	a := newConsumerClient(t, "10.0.0.1@100")
	b := newConsumerClient(t, "10.0.0.2@200")

	a.heartbeat(t, g, leader, group, topic)
	a.expectNotified(t, group) // its own arrival changes the group
	b.heartbeat(t, g, leader, group, topic)
	a.expectNotified(t, group)
	b.expectNotified(t, group)
	if ids, errResp := consumerList(t, g, a.Client, leader, group); !slices.Equal(ids, []string{a.id, b.id}) {
		t.Fatalf("consumer list %v (%v), want both", ids, errResp)
	}
	// A repeated heartbeat is no change.
	a.heartbeat(t, g, leader, group, topic)

	b.Close()
	a.expectNotified(t, group)
	if ids, errResp := consumerList(t, g, a.Client, leader, group); !slices.Equal(ids, []string{a.id}) {
		t.Fatalf("consumer list after B left: %v (%v)", ids, errResp)
	}
	select {
	case got := <-a.notified:
		t.Fatalf("extra notification for %q", got)
	default:
	}

	unreg := remoting.NewRequest(remoting.ReqUnregisterClient, map[string]string{"clientID": a.id, "consumerGroup": group}, nil)
	if resp := invokeOn(t, g, a.Client, leader, unreg); resp.Code != remoting.ResSuccess {
		t.Fatalf("unregister: %d %s", resp.Code, resp.Remark)
	}
	if _, errResp := consumerList(t, g, a.Client, leader, group); errResp == nil || errResp.Code != remoting.ResSystemError || errResp.Remark == "" {
		t.Fatalf("consumer list of an empty group answered %v", errResp)
	}
}

// TestClientHeartbeatExpiry drops a consumer whose heartbeats stop and
// tells the rest of its group.
func TestClientHeartbeatExpiry(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{Configure: func(_ int, c *broker.Config) {
		c.ClientChannelExpiry = 600 * time.Millisecond
	}})
	leader := g.WaitLeader(5 * time.Second)
	const topic, group = "ExpiryTopic", "expiring"
	createTopic(t, g, topic, 1)
	a := newConsumerClient(t, "10.0.0.1@1")
	b := newConsumerClient(t, "10.0.0.2@2")
	b.heartbeat(t, g, leader, group, topic)
	b.expectNotified(t, group)
	a.heartbeat(t, g, leader, group, topic)
	a.expectNotified(t, group)
	// A keeps heartbeating, B goes silent (its connection stays open).
	deadline := time.Now().Add(10 * time.Second)
	notified := false
	for {
		a.heartbeat(t, g, leader, group, topic)
		ids, _ := consumerList(t, g, a.Client, leader, group)
		if slices.Equal(ids, []string{a.id}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("silent consumer still listed: %v", ids)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case got := <-a.notified:
			notified = notified || got == group
		}
	}
	if !notified {
		a.expectNotified(t, group)
	}
}
