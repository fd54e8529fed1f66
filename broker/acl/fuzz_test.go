package acl

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// FuzzParse: any plain_acl.yml either parses into a configuration that
// compiles, or is refused with an error; never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sampleYAML))
	f.Add([]byte("accounts:\n  - {accessKey: abcdef, secretKey: 123456, whiteRemoteAddress: '10.1.1.{1,2}'}\n"))
	f.Add([]byte("globalWhiteRemoteAddresses: ['*', '10.0.0.0/8', '1.2.3.4-9']\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := Parse(b)
		if err != nil {
			return
		}
		if _, err := Compile(cfg); err != nil {
			t.Fatalf("parsed but does not compile: %v", err)
		}
		for _, a := range Mask(cfg).Accounts {
			if a.SecretKey != strings.Repeat("*", 8) {
				t.Fatalf("mask left %q", a.SecretKey)
			}
		}
	})
}

// FuzzCheck: any request is decided without a panic; a request signed
// with the account's secret never fails the signature check, and the
// same request with its body changed always does.
func FuzzCheck(f *testing.F) {
	f.Add(int16(10), "topic", "topicB", []byte("body"), "127.0.0.1", "")
	f.Add(int16(34), "consumerGroup", "g", []byte(`{"consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"t"}]}]}`), "::1", "tok")
	f.Add(int16(11), "topic", "%RETRY%groupA", []byte{}, "192.168.1.3", "")
	f.Add(int16(17), "Signature", "x", []byte(nil), "10.10.103.1", "")
	c := mustChecker(f)
	f.Fuzz(func(t *testing.T, code int16, key, value string, body []byte, remote, token string) {
		ip, err := netip.ParseAddr(remote)
		if err != nil {
			ip = netip.Addr{}
		}
		unsigned := remoting.NewRequest(code, map[string]string{key: value}, body)
		_ = c.Check(unsigned, ip)

		req := remoting.NewRequest(code, map[string]string{key: value, "topic": value}, body)
		protocol.SignRequest(req.ExtFields, body, "RocketMQ", "12345678", token)
		if d := c.Check(req, ip); d != nil && strings.Contains(d.Reason, "signature check failed") {
			t.Fatalf("a correctly signed request failed its signature: %v", d)
		}
		tampered := remoting.NewRequest(code, req.ExtFields, append(append([]byte{}, body...), 'x'))
		d := c.Check(tampered, ip)
		whitelisted := c.global.match(ip) || c.accounts["RocketMQ"].white.match(ip)
		if !whitelisted && (d == nil || !strings.Contains(d.Reason, "signature check failed")) {
			t.Fatalf("a tampered body passed the signature check: %v", d)
		}
	})
}
