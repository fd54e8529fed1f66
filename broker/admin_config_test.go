package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

func routePerm(t *testing.T, g *brokertest.Group, topic string) (int32, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := g.Client.Invoke(ctx, g.NSAddr, remoting.NewRequest(remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil {
		return 0, err
	}
	if resp.Code != remoting.ResSuccess {
		return 0, fmt.Errorf("route of %s: %d %q", topic, resp.Code, resp.Remark)
	}
	var rd protocol.TopicRouteData
	if err := json.Unmarshal(resp.Body, &rd); err != nil {
		return 0, err
	}
	if len(rd.QueueDatas) != 1 {
		return 0, fmt.Errorf("route of %s has %d queue datas", topic, len(rd.QueueDatas))
	}
	return rd.QueueDatas[0].Perm, nil
}

// TestBrokerPermissionDrain: brokerPermission=4 through a follower makes
// the group refuse sends on every node and register its topics read-only;
// GET_BROKER_CONFIG shows it; pulls still work; 6 gives writes back; a key
// that cannot change at run time is refused by name and changes nothing.
func TestBrokerPermissionDrain(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{})
	f := followerOf(g, leader)
	createTopicAt(t, g, leader, "PermTopic", 2, 6)
	mustSucceed(t, g.Invoke(f, sendMsgReq("PermTopic", 0, nil, []byte("before"))), "send before")

	setPerm := func(node int, body string) *remoting.Command {
		return g.Invoke(node, remoting.NewRequest(remoting.ReqUpdateBrokerConfig, nil, []byte(body)))
	}
	r := setPerm(f, "brokerPermission=4\nflushDiskType=ASYNC_FLUSH\n")
	if r.Code == remoting.ResSuccess || !strings.Contains(r.Remark, "flushDiskType cannot change at run time") {
		t.Fatalf("a fixed key: %d %q", r.Code, r.Remark)
	}
	mustSucceed(t, g.Invoke(f, sendMsgReq("PermTopic", 0, nil, []byte("still"))), "send after the refused update")

	mustSucceed(t, setPerm(f, "brokerPermission=4\n"), "wipe write through a follower")
	for i := range g.Len() {
		g.Eventually(5*time.Second, func() error {
			r := g.Invoke(i, sendMsgReq("PermTopic", 0, nil, []byte("during")))
			if r.Code != remoting.ResNoPermission || !strings.Contains(r.Remark, "sending message is forbidden") {
				return fmt.Errorf("node %d answers a send %d %q", i, r.Code, r.Remark)
			}
			return nil
		})
		g.Eventually(5*time.Second, func() error { // a follower forwards sends; its own state follows
			cfg := g.Invoke(i, remoting.NewRequest(remoting.ReqGetBrokerConfig, nil, nil))
			if cfg.Code != remoting.ResSuccess || !strings.Contains(string(cfg.Body), "brokerPermission=4\n") ||
				!strings.Contains(string(cfg.Body), "brokerName=broker-a\n") {
				return fmt.Errorf("node %d config %d:\n%s", i, cfg.Code, cfg.Body)
			}
			return nil
		})
	}
	g.Eventually(10*time.Second, func() error {
		p, err := routePerm(t, g, "PermTopic")
		if err == nil && p != protocol.PermRead {
			err = fmt.Errorf("route perm %d, want read only", p)
		}
		return err
	})
	pull := g.Invoke(leader, remoting.NewRequest(remoting.ReqPullMessage, map[string]string{"consumerGroup": "cg", "topic": "PermTopic",
		"queueId": "0", "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": "*", "subVersion": "0", "expressionType": "TAG"}, nil))
	mustSucceed(t, pull, "pull from a read-only group")

	mustSucceed(t, setPerm(leader, "brokerPermission=6"), "write back")
	g.Eventually(5*time.Second, func() error {
		if r := g.Invoke(f, sendMsgReq("PermTopic", 0, nil, []byte("after"))); r.Code != remoting.ResSuccess {
			return fmt.Errorf("send after: %d %q", r.Code, r.Remark)
		}
		return nil
	})
	g.Eventually(10*time.Second, func() error {
		p, err := routePerm(t, g, "PermTopic")
		if err == nil && p != protocol.PermReadWrite {
			err = fmt.Errorf("route perm %d, want read and write", p)
		}
		return err
	})
}
