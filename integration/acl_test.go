package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// The accounts of plain_acl.yml in these tests.
const (
	aclAdminKey, aclAdminSecret = "rocketmq2", "12345678"
	aclProdKey, aclProdSecret   = "producer1", "prod-secret-1"
	aclConsKey, aclConsSecret   = "consumer1", "cons-secret-1"
)

const aclYAML = `globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: rocketmq2
    secretKey: 12345678
    admin: true
  - accessKey: producer1
    secretKey: prod-secret-1
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - AclTopic=PUB
      - AclDenied=DENY
  - accessKey: consumer1
    secretKey: cons-secret-1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - AclTopic=SUB
    groupPerms:
      - acl-official-group=SUB
      - acl-sdk-group=SUB
`

// startACLCluster starts a cluster whose every node has plain_acl.yml, as
// RocketMQ users deploy it, and creates AclTopic (4 queues) as the admin.
func startACLCluster(t *testing.T) *cluster {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(aclYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startClusterWith(t, clusterOpts{brokerArgs: []string{"--acl", path}, sign: func(r *remoting.Command) {
		protocol.SignRequest(r.ExtFields, r.Body, aclAdminKey, aclAdminSecret, "")
	}})
	for i := range c.nodes {
		waitFor(t, 20*time.Second, func() bool { // every node applied the seed
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			resp, err := c.invoke(ctx, c.nodes[i].addr, remoting.NewRequest(remoting.ReqGetBrokerClusterACLInfo, nil, nil))
			return err == nil && resp.ExtFields["enabled"] == "true"
		})
	}
	createTopicOn(t, c, "AclTopic", 4)
	return c
}

// officialProducerAs is newOfficialProducer signing with cr when it is
// not nil.
func officialProducerAs(t *testing.T, ns, group string, cr *primitive.Credentials) rocketmq.Producer {
	t.Helper()
	if cr == nil {
		return newOfficialProducer(t, ns, group)
	}
	return newOfficialProducer(t, ns, group, producer.WithCredentials(*cr))
}

// expectCode16 checks an official client's error: NO_PERMISSION with a
// remark naming want.
func expectCode16(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: accepted", what)
	}
	if !strings.Contains(err.Error(), "CODE: 16") || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: %v, want CODE: 16 naming %q", what, err, want)
	}
}

// TestOfficialClientACL: the official Go client with primitive.Credentials
// sends and consumes under the right accounts; a wrong secret, a topic the
// account may not publish to, no credentials at all and a non-admin
// account's admin request are refused with code 16.
func TestOfficialClientACL(t *testing.T) {
	c := startACLCluster(t)
	ctx := context.Background()
	prod := officialProducerAs(t, c.nsAddr, "acl-prod", &primitive.Credentials{AccessKey: aclProdKey, SecretKey: aclProdSecret})
	const n = 50
	for i := range n {
		if _, err := prod.SendSync(ctx, e2eMessage("AclTopic", i)); err != nil {
			t.Fatalf("send %d as %s: %v", i, aclProdKey, err)
		}
	}
	_, err := prod.SendSync(ctx, primitive.NewMessage("AclDenied", []byte("x")))
	expectCode16(t, "send to a DENY topic", err, "AclDenied")

	wrong := officialProducerAs(t, c.nsAddr, "acl-wrong", &primitive.Credentials{AccessKey: aclProdKey, SecretKey: "not-the-secret"})
	_, err = wrong.SendSync(ctx, e2eMessage("AclTopic", 0))
	expectCode16(t, "a wrong secret", err, "signature check failed for accessKey="+aclProdKey)

	anon := officialProducerAs(t, c.nsAddr, "acl-anon", nil)
	_, err = anon.SendSync(ctx, e2eMessage("AclTopic", 0))
	expectCode16(t, "no credentials from a non-whitelisted address", err, "not in globalWhiteRemoteAddresses")

	var mu sync.Mutex
	got := map[string]bool{}
	pc := startOfficialConsumer(t, c.nsAddr, "acl-official-group", "AclTopic", consumer.MessageSelector{},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				got[m.GetProperty("idx")] = true
			}
			return consumer.ConsumeSuccess, nil
		}, consumer.WithCredentials(primitive.Credentials{AccessKey: aclConsKey, SecretKey: aclConsSecret}))
	defer pc.Shutdown()
	waitFor(t, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == n
	})
	for i := range n {
		if !got[strconv.Itoa(i)] {
			t.Fatalf("message %d not consumed", i)
		}
	}
}

func sdkAs(ak, sk string) client.Opt {
	return client.WithCredentials(client.Credentials{AccessKey: ak, SecretKey: sk})
}

// expectSDK16 checks an SDK error: a *client.Error with NO_PERMISSION.
func expectSDK16(t *testing.T, what string, err error, want string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Code != remoting.ResNoPermission || !strings.Contains(e.Remark, want) {
		t.Fatalf("%s: %v, want NO_PERMISSION naming %q", what, err, want)
	}
}

// TestSDKACL: our SDK signs with WithCredentials; the same refusals as the
// official client; an ACL change made through the admin API holds on every
// node within a second; admin requests need an admin account.
func TestSDKACL(t *testing.T) {
	c := startACLCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := client.NewProducer("acl-sdk-prod", client.WithNameServers(c.nsAddr), sdkAs(aclProdKey, aclProdSecret))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	const n = 50
	for i := range n {
		if _, err := p.Send(ctx, sdkMessage("AclTopic", i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	_, err = p.Send(ctx, &message.Message{Topic: "AclDenied", Body: []byte("x")})
	expectSDK16(t, "send to a DENY topic", err, "DENY on topic AclDenied")

	col := &sdkCollector{got: map[int]*message.MessageExt{}}
	startSDKConsumer(t, c.nsAddr, "acl-sdk-group", "AclTopic", "acl-sdk", col.handle, sdkAs(aclConsKey, aclConsSecret))
	waitFor(t, 60*time.Second, func() bool { return col.count() == n })

	plain, err := client.NewAdmin(client.WithNameServers(c.nsAddr), sdkAs(aclConsKey, aclConsSecret))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	_, err = plain.CreateTopic(ctx, client.TopicConfig{Topic: "NotAllowed"})
	expectSDK16(t, "topic creation by a plain account", err, "needs an admin account")
	_, err = plain.ACL(ctx, "")
	expectSDK16(t, "ACL listing by a plain account", err, "needs an admin account")

	admin, err := client.NewAdmin(client.WithNameServers(c.nsAddr), sdkAs(aclAdminKey, aclAdminSecret))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.PutACLAccount(ctx, "", client.ACLAccount{AccessKey: aclProdKey, DefaultTopicPerm: "DENY",
		DefaultGroupPerm: "SUB", TopicPerms: []string{"AclTopic=SUB"}}); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	for i := range c.nodes {
		waitFor(t, time.Second, func() bool {
			req := remoting.NewRequest(remoting.ReqSendMessage, map[string]string{"producerGroup": "pg", "topic": "AclTopic",
				"defaultTopic": protocol.DefaultTopic, "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
				"bornTimestamp": "0", "flag": "0", "reconsumeTimes": "0", "unitMode": "false", "batch": "false"}, []byte("x"))
			protocol.SignRequest(req.ExtFields, req.Body, aclProdKey, aclProdSecret, "")
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			defer rcancel()
			resp, err := c.admin.Invoke(rctx, c.nodes[i].addr, req)
			return err == nil && resp.Code == remoting.ResNoPermission
		})
	}
	t.Logf("the revocation held on all %d nodes %v after the admin call returned", len(c.nodes), time.Since(changed))
	gs, err := admin.ACLFrom(ctx, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != len(c.nodes) {
		t.Fatalf("ACL from %d nodes, want %d", len(gs), len(c.nodes))
	}
	for _, g := range gs {
		if !g.Enabled || g.Version != gs[0].Version || len(g.Config.Accounts) != 3 {
			t.Fatalf("node %s: enabled %v version %d (first %d), %d accounts", g.Addr, g.Enabled, g.Version, gs[0].Version, len(g.Config.Accounts))
		}
		for _, a := range g.Config.Accounts {
			if strings.Contains(a.SecretKey, "secret") || a.SecretKey == aclAdminSecret {
				t.Fatalf("listing shows %s's secret", a.AccessKey)
			}
		}
	}
	_, err = p.Send(ctx, sdkMessage("AclTopic", n))
	expectSDK16(t, "send after the revocation", err, "needs PUB")
}

// TestCLIACL: raftmq acl with credentials from the environment lists the
// accounts without their secrets; without credentials it is refused.
func TestCLIACL(t *testing.T) {
	c := startACLCluster(t)
	out := runCLIEnv(t, []string{client.EnvAccessKey + "=" + aclAdminKey, client.EnvSecretKey + "=" + aclAdminSecret},
		"acl", "list", "--namesrv", c.nsAddr)
	for _, want := range []string{aclAdminKey, aclProdKey, aclConsKey, "AclTopic=PUB", "enabled true"} {
		if !strings.Contains(out, want) {
			t.Fatalf("acl list output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, aclProdSecret) || strings.Contains(out, aclAdminSecret) {
		t.Fatalf("acl list shows a secret:\n%s", out)
	}
	p := startProc(t, "acl", "list", "--namesrv", c.nsAddr)
	if err := p.wait(t, 30*time.Second); err == nil || !strings.Contains(p.output(), "NO_PERMISSION") {
		t.Fatalf("acl list without credentials: %v\n%s", err, p.output())
	}
}
