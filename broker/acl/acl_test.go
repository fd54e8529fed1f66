package acl

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

const sampleYAML = `
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.{1,2}
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
`

func mustChecker(t testing.TB) *Checker {
	t.Helper()
	cfg, err := Parse([]byte(sampleYAML))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func signed(code int16, ext map[string]string, body []byte, ak, sk string) *remoting.Command {
	req := remoting.NewRequest(code, ext, body)
	protocol.SignRequest(req.ExtFields, body, ak, sk, "")
	return req
}

var outsider = netip.MustParseAddr("127.0.0.1")

func TestParseSample(t *testing.T) {
	cfg, err := Parse([]byte(sampleYAML))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.GlobalWhiteAddrs) != 2 || len(cfg.Accounts) != 2 || cfg.Accounts[0].SecretKey != "12345678" ||
		len(cfg.Accounts[0].TopicPerms) != 3 || !cfg.Accounts[1].Admin {
		t.Fatalf("parsed %+v", cfg)
	}
}

func TestParseRefusesBadConfigs(t *testing.T) {
	for name, y := range map[string]string{
		"short secret":   "accounts:\n  - accessKey: abcdefg\n    secretKey: 123\n",
		"bad perm":       "accounts:\n  - accessKey: abcdefg\n    secretKey: 1234567\n    defaultTopicPerm: ALL\n",
		"bad topic perm": "accounts:\n  - accessKey: abcdefg\n    secretKey: 1234567\n    topicPerms: [topicA]\n",
		"duplicate":      "accounts:\n  - {accessKey: abcdefg, secretKey: 1234567}\n  - {accessKey: abcdefg, secretKey: 7654321}\n",
		"bad address":    "globalWhiteRemoteAddresses: [300.1.1.1-2]\n",
		"not yaml":       "accounts: [",
	} {
		if _, err := Parse([]byte(y)); err == nil {
			t.Errorf("%s: parsed", name)
		} else if strings.Contains(err.Error(), "1234567") || strings.Contains(err.Error(), "7654321") {
			t.Errorf("%s: error names a secret: %v", name, err)
		}
	}
}

func TestAddrPatterns(t *testing.T) {
	cases := []struct {
		pattern string
		in, out []string
	}{
		{"*", []string{"1.2.3.4", "::1"}, nil},
		{"192.168.0.1", []string{"192.168.0.1"}, []string{"192.168.0.2"}},
		{"192.168.*.*", []string{"192.168.7.9"}, []string{"192.169.0.1", "::1"}},
		{"10.1.1.1-100", []string{"10.1.1.1", "10.1.1.100"}, []string{"10.1.1.101", "10.1.2.5"}},
		{"10.1.1.{3,5}", []string{"10.1.1.3", "10.1.1.5"}, []string{"10.1.1.4"}},
		{"10.0.0.0/8", []string{"10.200.1.1"}, []string{"11.0.0.1"}},
		{"::1", []string{"::1"}, []string{"127.0.0.1"}},
		{"", nil, []string{"127.0.0.1"}},
	}
	for _, c := range cases {
		p, err := parseAddrPattern(c.pattern)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		for _, a := range c.in {
			if !p.match(netip.MustParseAddr(a)) {
				t.Errorf("%q does not match %s", c.pattern, a)
			}
		}
		for _, a := range c.out {
			if p.match(netip.MustParseAddr(a)) {
				t.Errorf("%q matches %s", c.pattern, a)
			}
		}
	}
	for _, bad := range []string{"1.2.3", "1.2.{3,4}.5", "1.2.3.9-4", "1.2.3.x", "10.0.0.0/99"} {
		if _, err := parseAddrPattern(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func sendReq(topic string) map[string]string {
	return map[string]string{"producerGroup": "pg", "topic": topic, "queueId": "0"}
}

func pullReq(topic, group string) map[string]string {
	return map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0"}
}

// TestCheckDecisions walks RocketMQ's order of checks.
func TestCheckDecisions(t *testing.T) {
	c := mustChecker(t)
	ok := func(name string, req *remoting.Command, from string) {
		t.Helper()
		if d := c.Check(req, netip.MustParseAddr(from)); d != nil {
			t.Errorf("%s: refused: %v", name, d)
		}
	}
	refused := func(name string, req *remoting.Command, from, want string) {
		t.Helper()
		d := c.Check(req, netip.MustParseAddr(from))
		if d == nil {
			t.Errorf("%s: served", name)
			return
		}
		if !strings.Contains(d.Error(), want) || strings.Contains(d.Error(), "12345678") || d.Code() != remoting.ResNoPermission {
			t.Errorf("%s: %q (code %d), want it to contain %q and no secret", name, d.Error(), d.Code(), want)
		}
	}
	send := func(topic, ak, sk string) *remoting.Command {
		return signed(remoting.ReqSendMessage, sendReq(topic), []byte("body"), ak, sk)
	}
	unsigned := remoting.NewRequest(remoting.ReqSendMessage, sendReq("topicB"), nil)

	ok("globally whitelisted, unsigned", unsigned, "10.10.103.7")
	ok("globally whitelisted list", unsigned, "192.168.0.2")
	refused("unsigned", unsigned, "127.0.0.1", "carries no AccessKey")
	refused("unknown account", send("topicB", "nobody1", "12345678"), "127.0.0.1", `no account "nobody1"`)
	refused("wrong secret", send("topicB", "RocketMQ", "87654321"), "127.0.0.1", "signature check failed for accessKey=RocketMQ")
	ok("granted topic", send("topicB", "RocketMQ", "12345678"), "127.0.0.1")
	refused("denied topic", send("topicA", "RocketMQ", "12345678"), "127.0.0.1", "accessKey=RocketMQ has DENY on topic topicA")
	refused("sub-only topic", send("topicC", "RocketMQ", "12345678"), "127.0.0.1", "has SUB on topic topicC; SEND_MESSAGE needs PUB")
	refused("default topic perm", send("other", "RocketMQ", "12345678"), "127.0.0.1", "has by default DENY on topic other")

	tampered := send("topicB", "RocketMQ", "12345678")
	tampered.ExtFields["queueId"] = "1"
	refused("tampered header", tampered, "127.0.0.1", "signature check failed")
	tampered = send("topicB", "RocketMQ", "12345678")
	tampered.Body = []byte("other")
	refused("tampered body", tampered, "127.0.0.1", "signature check failed")

	ok("pull granted topic, default group SUB", signed(remoting.ReqPullMessage, pullReq("topicC", "g1"), nil, "RocketMQ", "12345678"), "127.0.0.1")
	refused("pull, denied group", signed(remoting.ReqPullMessage, pullReq("topicC", "groupA"), nil, "RocketMQ", "12345678"), "127.0.0.1",
		"DENY on group groupA")
	ok("retry topic checked as its group", signed(remoting.ReqPullMessage, pullReq(protocol.RetryTopic("groupB"), "groupB"), nil,
		"RocketMQ", "12345678"), "127.0.0.1")
	refused("retry topic of a denied group", send(protocol.RetryTopic("groupA"), "RocketMQ", "12345678"), "127.0.0.1", "group groupA")

	admin := signed(remoting.ReqUpdateAndCreateTopic, map[string]string{"topic": "x"}, nil, "RocketMQ", "12345678")
	refused("admin code, plain account", admin, "127.0.0.1", "needs an admin account, and accessKey=RocketMQ is not one")
	ok("admin code, admin account", signed(remoting.ReqUpdateAndCreateTopic, map[string]string{"topic": "x"}, nil, "rocketmq2", "12345678"), "127.0.0.1")
	ok("account whitelist skips the signature (as RocketMQ)", send("topicA", "rocketmq2", "wrongwrong"), "192.168.1.20")

	hb, _ := json.Marshal(protocol.HeartbeatData{ClientID: "c", ConsumerDataSet: []protocol.ConsumerData{{GroupName: "g1",
		SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "topicC"}, {Topic: "topicA"}}}}})
	refused("heartbeat subscribing a denied topic", signed(remoting.ReqHeartBeat, map[string]string{}, hb, "RocketMQ", "12345678"),
		"127.0.0.1", "topic topicA")
}

// TestSecurityTokenSigned: a SecurityToken is part of what is signed, as
// the Java broker checks it; one added after signing (as the official Go
// client does) or changed is refused.
func TestSecurityTokenSigned(t *testing.T) {
	c := mustChecker(t)
	req := remoting.NewRequest(remoting.ReqSendMessage, sendReq("topicB"), nil)
	protocol.SignRequest(req.ExtFields, nil, "RocketMQ", "12345678", "tok")
	if d := c.Check(req, outsider); d != nil {
		t.Fatalf("signed token: %v", d)
	}
	req.ExtFields[protocol.ACLSecurityToken] = "other"
	if d := c.Check(req, outsider); d == nil {
		t.Fatal("a changed signed token passed")
	}
	req = signed(remoting.ReqSendMessage, sendReq("topicB"), nil, "RocketMQ", "12345678")
	req.ExtFields[protocol.ACLSecurityToken] = "tok"
	if d := c.Check(req, outsider); d == nil {
		t.Fatal("a token outside the signature passed")
	}
}

func TestMaskHidesSecrets(t *testing.T) {
	cfg, _ := Parse([]byte(sampleYAML))
	b, _ := json.Marshal(Mask(cfg))
	if strings.Contains(string(b), "12345678") || cfg.Accounts[0].SecretKey != "12345678" {
		t.Fatalf("masked: %s (original changed: %v)", b, cfg.Accounts[0].SecretKey != "12345678")
	}
}
