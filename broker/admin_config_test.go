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

// TestRuntimeSettings: UPDATE_BROKER_CONFIG of the run-time settings
// through a follower changes them on every node (GET_BROKER_CONFIG shows
// them, sends obey them), survives a snapshot and a restart, and refuses
// a bad value by name without changing anything.
func TestRuntimeSettings(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{})
	f := followerOf(g, leader)
	update := func(node int, body string) *remoting.Command {
		return g.Invoke(node, remoting.NewRequest(remoting.ReqUpdateBrokerConfig, nil, []byte(body)))
	}
	configHas := func(i int, lines ...string) error {
		cfg := g.Invoke(i, remoting.NewRequest(remoting.ReqGetBrokerConfig, nil, nil))
		for _, l := range lines {
			if cfg.Code != remoting.ResSuccess || !strings.Contains(string(cfg.Body), l+"\n") {
				return fmt.Errorf("node %d config lacks %s:\n%s", i, l, cfg.Body)
			}
		}
		return nil
	}
	mustSucceed(t, update(f, "autoCreateTopicEnable=false\ndefaultTopicQueueNums=2\ntransactionCheckMax=3\n"), "update through a follower")
	for i := range g.Len() {
		g.Eventually(5*time.Second, func() error {
			return configHas(i, "autoCreateTopicEnable=false", "defaultTopicQueueNums=2", "transactionCheckMax=3")
		})
		if r := g.Invoke(i, sendMsgReq(fmt.Sprint("NoAuto", i), 0, nil, []byte("x"))); r.Code != remoting.ResTopicNotExist {
			t.Fatalf("node %d: a send to an unknown topic with auto-creation off: %d %q", i, r.Code, r.Remark)
		}
	}
	for _, bad := range []string{"defaultTopicQueueNums=0", "transactionCheckMax=many", "autoCreateTopicEnable=maybe", "maxMessageSize=10"} {
		r := update(leader, "autoCreateTopicEnable=true\n"+bad+"\n")
		key, _, _ := strings.Cut(bad, "=")
		if r.Code == remoting.ResSuccess || !strings.Contains(r.Remark, key) || !strings.Contains(r.Remark, "nothing was changed") {
			t.Fatalf("update with %s: %d %q", bad, r.Code, r.Remark)
		}
	}
	if err := configHas(leader, "autoCreateTopicEnable=false"); err != nil {
		t.Fatalf("a refused update changed a setting: %v", err)
	}

	mustSucceed(t, update(leader, "autoCreateTopicEnable=true\n"), "auto-creation back on")
	g.Eventually(5*time.Second, func() error {
		if r := g.Invoke(f, sendMsgReq("AutoTwo", 0, nil, []byte("x"))); r.Code != remoting.ResSuccess {
			return fmt.Errorf("send: %d %q", r.Code, r.Remark)
		}
		return nil
	})
	g.Eventually(10*time.Second, func() error {
		n, err := routeQueues(t, g, "AutoTwo")
		if err == nil && n != 2 {
			err = fmt.Errorf("auto-created with %d queues, want defaultTopicQueueNums=2", n)
		}
		return err
	})

	// A snapshot, then a restart: the node restores the settings from it.
	mustSucceed(t, g.Invoke(f, remoting.NewRequest(remoting.ReqRaftSnapshot, nil, nil)), "snapshot")
	g.StopNode(f)
	g.StartNode(f)
	g.Eventually(10*time.Second, func() error {
		return configHas(f, "autoCreateTopicEnable=true", "defaultTopicQueueNums=2", "transactionCheckMax=3")
	})
}

func routeQueues(t *testing.T, g *brokertest.Group, topic string) (int32, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := g.Client.Invoke(ctx, g.NSAddr, remoting.NewRequest(remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil {
		return 0, err
	}
	var rd protocol.TopicRouteData
	if resp.Code != remoting.ResSuccess || json.Unmarshal(resp.Body, &rd) != nil || len(rd.QueueDatas) != 1 {
		return 0, fmt.Errorf("route of %s: %d %q", topic, resp.Code, resp.Remark)
	}
	return rd.QueueDatas[0].WriteQueueNums, nil
}
