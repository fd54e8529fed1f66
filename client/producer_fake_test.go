package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// fakeServer is a remoting server on loopback with scripted handlers.
type fakeServer struct {
	srv        *remoting.Server
	addr       string
	routeCalls atomic.Int32

	mu         sync.Mutex
	heartbeats []protocol.HeartbeatData
}

func startFake(t *testing.T) *fakeServer {
	t.Helper()
	cfg := remoting.DefaultServerConfig()
	cfg.Logger = testLogger(t)
	srv, err := remoting.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return &fakeServer{srv: srv, addr: ln.Addr().String()}
}

// fakeCluster is a fake name server routing topic "T" (one queue) to one
// fake broker whose SEND_MESSAGE_V2 answers are scripted by codes.
func fakeCluster(t *testing.T, codes ...int16) (ns, broker *fakeServer, sends *atomic.Int32) {
	ns, broker, sends = startFake(t), startFake(t), &atomic.Int32{}
	route := protocol.TopicRouteData{
		QueueDatas:  []protocol.QueueData{{BrokerName: "b", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		BrokerDatas: []protocol.BrokerData{{Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{0: broker.addr}}},
	}
	body, _ := json.Marshal(route)
	ns.srv.HandleFunc(remoting.ReqGetRouteInfoByTopic, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		ns.routeCalls.Add(1)
		if req.ExtFields["topic"] != "T" {
			return remoting.NewResponse(req, remoting.ResTopicNotExist, "no such topic")
		}
		resp := remoting.NewResponse(req, remoting.ResSuccess, "")
		resp.Body = body
		return resp
	})
	broker.srv.HandleFunc(remoting.ReqHeartBeat, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		var hb protocol.HeartbeatData
		if err := json.Unmarshal(req.Body, &hb); err == nil {
			broker.mu.Lock()
			broker.heartbeats = append(broker.heartbeats, hb)
			broker.mu.Unlock()
		}
		return remoting.NewResponse(req, remoting.ResSuccess, "")
	})
	broker.srv.HandleFunc(remoting.ReqSendMessageV2, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		n := int(sends.Add(1)) - 1
		code := remoting.ResSuccess
		if n < len(codes) {
			code = codes[n]
		}
		resp := remoting.NewResponse(req, code, "scripted")
		resp.ExtFields = map[string]string{"msgId": "7F00000100002A9F0000000000000000", "queueId": "0", "queueOffset": "42"}
		return resp
	})
	return ns, broker, sends
}

// TestProducerRetriesRetriable: SYSTEM_BUSY twice, then success, within
// the default two retries; a first name server that is down is skipped.
func TestProducerRetriesRetriable(t *testing.T) {
	ns, _, sends := fakeCluster(t, remoting.ResSystemBusy, remoting.ResSystemBusy)
	p, err := NewProducer("pg-test", WithNameServers("127.0.0.1:1", ns.addr), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 10*time.Second)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	res, err := p.Send(ctx, newMsg("T", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 3 || sends.Load() != 3 || res.QueueOffset != 42 {
		t.Fatalf("result %+v after %d sends, want 3 attempts", res, sends.Load())
	}
}

// TestProducerRetryBudget: NO_PERMISSION is retried twice (the default),
// then returned as a retriable *Error; MESSAGE_ILLEGAL is not retried.
func TestProducerRetryBudget(t *testing.T) {
	for _, c := range []struct {
		code      int16
		sends     int32
		retriable bool
	}{{remoting.ResNoPermission, 3, true}, {remoting.ResMessageIllegal, 1, false}} {
		ns, _, sends := fakeCluster(t, c.code, c.code, c.code, c.code)
		p, err := NewProducer("pg-test", WithNameServers(ns.addr), WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		ctx := testCtx(t, 10*time.Second)
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = p.Send(ctx, newMsg("T", "x"))
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code || e.Retriable() != c.retriable || sends.Load() != c.sends {
			t.Errorf("code %d: err %v after %d sends, want %d sends", c.code, err, sends.Load(), c.sends)
		}
		p.Close(ctx)
	}
}

// TestProducerNoRoute: a topic unknown to the name server, without a TBW102
// route for auto-creation, fails with ErrNoRoute once the send timeout ends.
func TestProducerNoRoute(t *testing.T) {
	ns, _, _ := fakeCluster(t)
	p, err := NewProducer("pg-test", WithNameServers(ns.addr), WithSendTimeout(300*time.Millisecond), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 10*time.Second)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if _, err := p.Send(ctx, newMsg("Unknown", "x")); !errors.Is(err, ErrNoRoute) {
		t.Fatalf("send to unknown topic: %v", err)
	}
}

// TestProducerHeartbeatAndRefresh: the broker named by a route gets a
// heartbeat with the producer group at once and then periodically; the
// route is fetched again periodically.
func TestProducerHeartbeatAndRefresh(t *testing.T) {
	ns, broker, _ := fakeCluster(t)
	p, err := NewProducer("pg-hb", WithNameServers(ns.addr), WithInstanceName("hb"),
		WithHeartbeatInterval(50*time.Millisecond), WithRouteRefreshInterval(50*time.Millisecond), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 10*time.Second)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if !strings.HasSuffix(p.ClientID(), "@hb") {
		t.Fatalf("client id %q", p.ClientID())
	}
	if _, err := p.Send(ctx, newMsg("T", "x")); err != nil {
		t.Fatal(err)
	}
	routeCalls := ns.routeCalls.Load()
	eventually(t, 5*time.Second, func() error {
		broker.mu.Lock()
		defer broker.mu.Unlock()
		if len(broker.heartbeats) < 3 {
			return fmt.Errorf("%d heartbeats", len(broker.heartbeats))
		}
		hb := broker.heartbeats[0]
		if hb.ClientID != p.ClientID() || len(hb.ProducerDataSet) != 1 || hb.ProducerDataSet[0].GroupName != "pg-hb" {
			return fmt.Errorf("heartbeat %+v", hb)
		}
		if n := ns.routeCalls.Load(); n < routeCalls+2 {
			return fmt.Errorf("route fetched %d times after the send, want 2 more", n-routeCalls)
		}
		return nil
	})
}
