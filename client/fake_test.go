package client

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/namesrv"
	"github.com/raftmq/raftmq/remoting"
)

// fakeServer is a remoting server on loopback with scripted handlers.
type fakeServer struct {
	srv  *remoting.Server
	addr string
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
	route := namesrv.TopicRouteData{
		QueueDatas:  []namesrv.QueueData{{BrokerName: "b", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		BrokerDatas: []namesrv.BrokerData{{Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{0: broker.addr}}},
	}
	body, _ := json.Marshal(route)
	ns.srv.HandleFunc(remoting.ReqGetRouteInfoByTopic, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		if req.ExtFields["topic"] != "T" {
			return remoting.NewResponse(req, remoting.ResTopicNotExist, "no such topic")
		}
		resp := remoting.NewResponse(req, remoting.ResSuccess, "")
		resp.Body = body
		return resp
	})
	broker.srv.HandleFunc(remoting.ReqHeartBeat, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
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
	p, err := NewProducer(WithNameServers("127.0.0.1:1", ns.addr), WithLogger(testLogger(t)))
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
		p, err := NewProducer(WithNameServers(ns.addr), WithLogger(testLogger(t)))
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
	p, err := NewProducer(WithNameServers(ns.addr), WithSendTimeout(300*time.Millisecond), WithLogger(testLogger(t)))
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
