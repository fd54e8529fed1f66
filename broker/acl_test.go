package broker_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

const (
	aclAdmin, aclAdminSecret = "admin-user", "admin-secret"
	aclAlice, aclAliceSecret = "alice-user", "alice-secret"
)

func aclSeed() *protocol.ACLConfig {
	return &protocol.ACLConfig{Accounts: []protocol.PlainAccessConfig{
		{AccessKey: aclAdmin, SecretKey: aclAdminSecret, Admin: true},
		{AccessKey: aclAlice, SecretKey: aclAliceSecret, DefaultTopicPerm: "DENY", DefaultGroupPerm: "SUB", TopicPerms: []string{"AclTopic=PUB|SUB"}},
	}}
}

func signedAs(req *remoting.Command, ak, sk string) *remoting.Command {
	protocol.SignRequest(req.ExtFields, req.Body, ak, sk, "")
	return req
}

func expectDenied(t *testing.T, resp *remoting.Command, what string, want ...string) {
	t.Helper()
	if resp.Code != remoting.ResNoPermission {
		t.Fatalf("%s: code %d (%s) %q, want NO_PERMISSION", what, resp.Code, remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	for _, w := range want {
		if !strings.Contains(resp.Remark, w) {
			t.Fatalf("%s: remark %q does not name %q", what, resp.Remark, w)
		}
	}
	if strings.Contains(resp.Remark, "secret") {
		t.Fatalf("%s: remark %q shows a secret", what, resp.Remark)
	}
}

// TestACLReplicatedAndEnforced: one node's --acl seeds the group; every
// node enforces it (the others have no file); forwarded writes pass under
// the group's peer account; a change on the leader holds on every node
// within a second; admin codes need an admin account.
func TestACLReplicatedAndEnforced(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{Configure: func(i int, c *broker.Config) {
		if i == 0 {
			c.ACL = aclSeed()
		}
	}})
	g.Eventually(5*time.Second, func() error {
		for i := range g.Len() {
			if !g.Broker(i).Metadata().ACL().Enabled {
				return fmt.Errorf("node %d has not applied the seed", i)
			}
		}
		return nil
	})
	f := followerOf(g, leader)
	topicReq := func() *remoting.Command {
		return remoting.NewRequest(remoting.ReqUpdateAndCreateTopic, map[string]string{"topic": "AclTopic", "defaultTopic": protocol.DefaultTopic,
			"readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}, nil)
	}
	for i := range g.Len() {
		expectDenied(t, g.Invoke(i, topicReq()), fmt.Sprintf("unsigned topic create on node %d", i), "carries no AccessKey")
	}
	expectDenied(t, g.Invoke(f, signedAs(topicReq(), aclAlice, aclAliceSecret)), "topic create by a plain account",
		"needs an admin account", aclAlice)
	expectDenied(t, g.Invoke(f, signedAs(topicReq(), aclAdmin, "wrong-secret")), "wrong secret", "signature check failed", aclAdmin)
	mustSucceed(t, g.Invoke(f, signedAs(topicReq(), aclAdmin, aclAdminSecret)), "topic create by the admin through a follower")

	send := func(node int, ak, sk string) *remoting.Command {
		return g.Invoke(node, signedAs(sendMsgReq("AclTopic", 0, nil, []byte("m")), ak, sk))
	}
	mustSucceed(t, send(f, aclAlice, aclAliceSecret), "alice's send through a follower")
	expectDenied(t, g.Invoke(f, signedAs(sendMsgReq("OtherTopic", 0, nil, []byte("m")), aclAlice, aclAliceSecret)),
		"a topic alice may not use", "OtherTopic", "DENY")

	// Take PUB away on the leader; every node must refuse within a second.
	update := remoting.NewRequest(remoting.ReqUpdateAndCreateACLConfig, protocol.PlainAccessConfig{AccessKey: aclAlice,
		DefaultTopicPerm: "DENY", DefaultGroupPerm: "SUB", TopicPerms: []string{"AclTopic=SUB"}}.Ext(), nil)
	expectDenied(t, g.Invoke(leader, signedAs(update.Clone(), aclAlice, aclAliceSecret)), "an ACL change by a plain account", "admin")
	mustSucceed(t, g.Invoke(leader, signedAs(update, aclAdmin, aclAdminSecret)), "the ACL change")
	changed := time.Now()
	for i := range g.Len() {
		g.Eventually(time.Second, func() error {
			if r := send(i, aclAlice, aclAliceSecret); r.Code != remoting.ResNoPermission {
				return fmt.Errorf("node %d still answers %d %q", i, r.Code, r.Remark)
			}
			return nil
		})
	}
	if d := time.Since(changed); d > time.Second {
		t.Fatalf("the change took %v to hold on every node", d)
	}
	// The update kept alice's secret: her signature still checks, only
	// the permission is gone.
	expectDenied(t, send(leader, aclAlice, aclAliceSecret), "send after the change", "SUB on topic AclTopic", "needs PUB")

	white := remoting.NewRequest(remoting.ReqUpdateGlobalWhiteAddrsConfig, map[string]string{"globalWhiteAddrs": "127.0.0.1"}, nil)
	mustSucceed(t, g.Invoke(f, signedAs(white, aclAdmin, aclAdminSecret)), "whitelisting 127.0.0.1 through a follower")
	for i := range g.Len() {
		g.Eventually(time.Second, func() error {
			if r := g.Invoke(i, sendMsgReq("AclTopic", 0, nil, []byte("m"))); r.Code != remoting.ResSuccess {
				return fmt.Errorf("node %d answers an unsigned send from a whitelisted address %d %q", i, r.Code, r.Remark)
			}
			return nil
		})
	}
	info := g.Invoke(f, remoting.NewRequest(remoting.ReqGetBrokerClusterACLInfo, nil, nil))
	mustSucceed(t, info, "ACL info")
	if body := string(info.Body); strings.Contains(body, aclAliceSecret) || strings.Contains(body, aclAdminSecret) ||
		strings.Contains(body, "raftmq.peer") || !strings.Contains(body, aclAlice) {
		t.Fatalf("ACL info body %s: secrets or the peer account shown, or alice missing", body)
	}
}

// TestACLSeedOnceAndRestart: a group's ACL, once seeded, is not replaced
// by another node's file, even when that node leads, and a restarted node
// enforces it from its log.
func TestACLSeedOnceAndRestart(t *testing.T) {
	var later atomic.Pointer[protocol.ACLConfig]
	g, _ := startGroup(t, brokertest.Options{Configure: func(i int, c *broker.Config) {
		if i == 0 {
			c.ACL = aclSeed()
		} else if i == 2 {
			c.ACL = later.Load()
		}
	}})
	allApplied := func() error {
		for i := range g.Len() {
			if !g.Broker(i).Metadata().ACL().Enabled {
				return fmt.Errorf("node %d has not applied the seed", i)
			}
		}
		return nil
	}
	g.Eventually(5*time.Second, allApplied)
	seeded := g.Broker(0).Metadata().ACL()
	later.Store(&protocol.ACLConfig{Accounts: []protocol.PlainAccessConfig{{AccessKey: "mallory", SecretKey: "mallory-pass", Admin: true}}})
	g.StopNode(2)
	g.StartNode(2)
	g.Eventually(10*time.Second, allApplied)
	leader := g.WaitLeader(5 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Broker(leader).Node().TransferLeadership(ctx, g.Broker(2).Node().ID()); err != nil && leader != 2 {
		t.Fatalf("moving leadership to node 2: %v", err)
	}
	g.Eventually(10*time.Second, func() error {
		if !g.Broker(2).Node().IsLeader() {
			return fmt.Errorf("node 2 does not lead yet")
		}
		return nil
	})
	// Whatever node 2's seeder proposes is applied after this barrier's
	// entries or not at all; a seed over a seeded ACL changes nothing.
	if err := g.Broker(2).Node().Raft().Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	for i := range g.Len() {
		if got := g.Broker(i).Metadata().ACL(); got.Version != seeded.Version || len(got.Config.Accounts) != 2 ||
			got.Config.Accounts[0].AccessKey != aclAdmin {
			t.Fatalf("node %d: accounts %+v at version %d, want the first seed at %d", i, got.Config.Accounts, got.Version, seeded.Version)
		}
	}
	r := g.Invoke(2, signedAs(remoting.NewRequest(remoting.ReqGetBrokerClusterACLInfo, nil, nil), "mallory", "mallory-pass"))
	expectDenied(t, r, "an account only in a later node's file", "mallory")
}
