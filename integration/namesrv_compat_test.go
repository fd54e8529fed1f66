package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/raftmq/raftmq/namesrv"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// serve starts a remoting-based server on a loopback port.
func serveOn(t *testing.T, serve func(net.Listener) error, shutdown func(context.Context) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-done
	})
	return ln.Addr().String()
}

// TestOfficialClientRoutesThroughNameServer: the official producer asks the
// real name server for a route (the JSON it parses by hand), finds the
// group's leader as id 0 and sends to it.
func TestOfficialClientRoutesThroughNameServer(t *testing.T) {
	rlog.SetLogLevel("error")
	ns, err := namesrv.New(namesrv.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	nsAddr := serveOn(t, ns.Serve, ns.Shutdown)

	// The "leader" is a fake broker; a follower address that nobody serves
	// is listed as id 1, which a producer must never send to.
	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	brokerAddr := bln.Addr().String()
	fb := newFakeBroker(brokerAddr)
	bs, err := remoting.NewServer(remoting.DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	fb.register(bs)
	bdone := make(chan error, 1)
	go func() { bdone <- bs.Serve(bln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = bs.Shutdown(ctx)
		<-bdone
	})

	cl, err := remoting.NewClient(remoting.DefaultClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	body, _ := json.Marshal(protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigWrapper{
		TopicConfigTable: map[string]protocol.TopicConfig{"TopicTest": {TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
	}})
	for _, r := range []struct{ addr, id, term string }{{brokerAddr, "0", "2"}, {"127.0.0.1:1", "1", "0"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cl.Invoke(ctx, nsAddr, remoting.NewRequest(remoting.ReqRegisterBroker, map[string]string{
			"clusterName": "c1", "brokerName": "broker-a", "brokerAddr": r.addr, "brokerId": r.id, "raftTerm": r.term,
		}, body))
		cancel()
		if err != nil || resp.Code != remoting.ResSuccess {
			t.Fatalf("register %s: %v %v", r.addr, resp, err)
		}
	}

	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{nsAddr})),
		producer.WithGroupName("pg-ns"),
		producer.WithInstanceName(fmt.Sprintf("ns-%d", time.Now().UnixNano())),
		producer.WithRetry(0),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	for i := 0; i < 8; i++ {
		res, err := p.SendSync(context.Background(), primitive.NewMessage("TopicTest", []byte("x")))
		if err != nil || res.Status != primitive.SendOK || res.MessageQueue.BrokerName != "broker-a" {
			t.Fatalf("send %d through the name server's route: %v %v", i, res, err)
		}
	}
	fb.waitSend(t)
}
