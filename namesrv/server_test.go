package namesrv

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startServer runs a name server on a loopback port and returns its
// address and a client.
func startServer(t *testing.T, cfg Config) (*Server, string, *remoting.Client) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	cl, err := remoting.NewClient(remoting.DefaultClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-done
	})
	return s, ln.Addr().String(), cl
}

func invoke(t *testing.T, cl *remoting.Client, addr string, code int16, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		t.Fatalf("invoke %s: %v", remoting.CodeName(code), err)
	}
	return resp
}

func registerExt(addr, id, term string) map[string]string {
	return map[string]string{"clusterName": "c1", "brokerName": "broker-a", "brokerAddr": addr, "brokerId": id, "raftTerm": term}
}

func registerBody(t *testing.T, topics ...string) []byte {
	t.Helper()
	b, err := json.Marshal(protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigWrapper{
		TopicConfigTable: func() map[string]protocol.TopicConfig {
			m := map[string]protocol.TopicConfig{}
			for _, tp := range topics {
				m[tp] = protocol.TopicConfig{TopicName: tp, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}
			}
			return m
		}(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestServerRegisterAndRoute(t *testing.T) {
	_, addr, cl := startServer(t, DefaultConfig())
	resp := invoke(t, cl, addr, remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	if resp.Code != remoting.ResTopicNotExist || !strings.Contains(resp.Remark, "T") {
		t.Fatalf("unknown topic = %d %q, want 17 with remark", resp.Code, resp.Remark)
	}
	resp = invoke(t, cl, addr, remoting.ReqRegisterBroker, registerExt("127.0.0.1:10911", "0", "3"), registerBody(t, "T"))
	if resp.Code != remoting.ResSuccess || resp.ExtFields["masterAddr"] != "127.0.0.1:10911" {
		t.Fatalf("register = %v", resp)
	}
	resp = invoke(t, cl, addr, remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("route = %v", resp)
	}
	var rd protocol.TopicRouteData
	if err := json.Unmarshal(resp.Body, &rd); err != nil {
		t.Fatal(err)
	}
	if len(rd.QueueDatas) != 1 || rd.QueueDatas[0].WriteQueueNums != 8 || rd.BrokerDatas[0].BrokerAddrs[0] != "127.0.0.1:10911" {
		t.Fatalf("route = %s", resp.Body)
	}
	if strings.Contains(string(resp.Body), " ") {
		t.Fatalf("route JSON has spaces: %s", resp.Body)
	}

	resp = invoke(t, cl, addr, remoting.ReqGetAllTopicListFromNameServer, nil, nil)
	var tl protocol.TopicList
	if err := json.Unmarshal(resp.Body, &tl); err != nil || len(tl.TopicList) != 1 || tl.TopicList[0] != "T" {
		t.Fatalf("topic list = %s %v", resp.Body, err)
	}
	resp = invoke(t, cl, addr, remoting.ReqGetBrokerClusterInfo, nil, nil)
	var ci protocol.ClusterInfo
	if err := json.Unmarshal(resp.Body, &ci); err != nil || ci.ClusterAddrTable["c1"][0] != "broker-a" {
		t.Fatalf("cluster info = %s %v", resp.Body, err)
	}
}

func TestServerBadRegistrationsGetRemarks(t *testing.T) {
	_, addr, cl := startServer(t, DefaultConfig())
	for _, tc := range []struct {
		name string
		ext  map[string]string
		body []byte
		want string
	}{
		{"no broker name", map[string]string{"clusterName": "c", "brokerAddr": "a", "brokerId": "0"}, nil, "brokerName"},
		{"bad id", registerExt("a", "x", "1"), nil, "brokerId"},
		{"bad term", registerExt("a", "0", "-1"), nil, "raftTerm"},
		{"bad body", registerExt("a", "0", "1"), []byte("{not json"), "body"},
		{"compressed", map[string]string{"clusterName": "c", "brokerName": "b", "brokerAddr": "a", "brokerId": "0", "compressed": "true"}, nil, "compressed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := invoke(t, cl, addr, remoting.ReqRegisterBroker, tc.ext, tc.body)
			if resp.Code != remoting.ResSystemError || !strings.Contains(resp.Remark, tc.want) {
				t.Fatalf("got %d %q, want SYSTEM_ERROR mentioning %q", resp.Code, resp.Remark, tc.want)
			}
		})
	}
	// The server is still healthy afterwards.
	resp := invoke(t, cl, addr, remoting.ReqGetAllTopicListFromNameServer, nil, nil)
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("after bad input: %v", resp)
	}
}

func TestServerDropsFollowerWhenItsConnectionCloses(t *testing.T) {
	s, addr, cl := startServer(t, DefaultConfig())
	invoke(t, cl, addr, remoting.ReqRegisterBroker, registerExt("n1:1", "0", "1"), registerBody(t, "T"))

	follower, err := remoting.NewClient(remoting.DefaultClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	invoke(t, follower, addr, remoting.ReqRegisterBroker, registerExt("n2:1", "1", "0"), registerBody(t, "T"))
	if got := len(addrsOf(t, s.Table())); got != 2 {
		t.Fatalf("%d addresses before the follower left", got)
	}
	follower.Close()
	deadline := time.Now().Add(5 * time.Second)
	for len(addrsOf(t, s.Table())) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("follower still routed after its connection closed: %v", addrsOf(t, s.Table()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestServerEvictsSilentBrokers(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BrokerTimeout, cfg.ScanInterval = 100*time.Millisecond, 20*time.Millisecond
	s, addr, cl := startServer(t, cfg)
	invoke(t, cl, addr, remoting.ReqRegisterBroker, registerExt("n1:1", "0", "1"), registerBody(t, "T"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := s.Table().Route("T"); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("silent broker not evicted")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestServerKVConfigAndOrderTopicConf(t *testing.T) {
	_, addr, cl := startServer(t, DefaultConfig())
	invoke(t, cl, addr, remoting.ReqRegisterBroker, registerExt("n1:1", "0", "1"), registerBody(t, "T"))
	resp := invoke(t, cl, addr, remoting.ReqPutKVConfig, map[string]string{"namespace": namespaceOrderTopic, "key": "T", "value": "broker-a:8"}, nil)
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("put kv = %v", resp)
	}
	resp = invoke(t, cl, addr, remoting.ReqGetKVConfig, map[string]string{"namespace": namespaceOrderTopic, "key": "T"}, nil)
	if resp.ExtFields["value"] != "broker-a:8" {
		t.Fatalf("get kv = %v", resp)
	}
	resp = invoke(t, cl, addr, remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	var rd protocol.TopicRouteData
	if err := json.Unmarshal(resp.Body, &rd); err != nil || rd.OrderTopicConf != "broker-a:8" {
		t.Fatalf("route orderTopicConf = %q %v", rd.OrderTopicConf, err)
	}
	invoke(t, cl, addr, remoting.ReqDeleteKVConfig, map[string]string{"namespace": namespaceOrderTopic, "key": "T"}, nil)
	resp = invoke(t, cl, addr, remoting.ReqGetKVConfig, map[string]string{"namespace": namespaceOrderTopic, "key": "T"}, nil)
	if resp.Code != remoting.ResQueryNotFound {
		t.Fatalf("deleted kv = %v", resp)
	}
	resp = invoke(t, cl, addr, remoting.ReqPutKVConfig, map[string]string{"namespace": "x"}, nil)
	if resp.Code != remoting.ResSystemError || resp.Remark == "" {
		t.Fatalf("bad put kv = %v", resp)
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr, cfg.BrokerTimeout, cfg.ScanInterval = "", 0, -1
	err := cfg.Validate()
	for _, want := range []string{"Addr", "BrokerTimeout", "ScanInterval"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want mention of %s", err, want)
		}
	}
}
