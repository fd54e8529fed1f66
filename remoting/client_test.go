package remoting

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestClientReconnectsAfterServerRestart(t *testing.T) {
	ts := startServer(t, nil)
	ts.HandleFunc(ReqSendMessage, echoHandler)
	cl := newTestClient(t)
	ctx := testCtx(t)
	if _, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqSendMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	ts.stop(t)
	// While the server is down calls fail fast instead of hanging.
	if _, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqSendMessage, nil, nil)); err == nil {
		t.Fatal("call succeeded with the server down")
	}
	var ln net.Listener
	waitFor(t, "address to be free", func() bool {
		var err error
		ln, err = net.Listen("tcp", ts.addr)
		return err == nil
	})
	ts2 := serveOn(t, ln, nil)
	ts2.HandleFunc(ReqSendMessage, echoHandler)
	resp, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqSendMessage, map[string]string{"again": "yes"}, nil))
	if err != nil || resp.ExtFields["again"] != "yes" {
		t.Fatalf("after restart: %v, %v", resp, err)
	}
}

func TestBrokenConnFailsAllPendingPromptly(t *testing.T) {
	ts := startServer(t, nil)
	const n = 4
	arrived := make(chan struct{}, n)
	ts.HandleFunc(ReqPullMessage, func(ctx context.Context, _ *Conn, req *Command) *Command {
		arrived <- struct{}{}
		<-ctx.Done()
		return nil
	})
	cl := newTestClient(t)
	errs := make(chan error, n)
	ctx := testCtx(t)
	for range n {
		cl.InvokeAsync(ctx, ts.addr, NewRequest(ReqPullMessage, nil, nil), func(_ *Command, err error) { errs <- err })
	}
	for range n {
		recv(t, arrived, "handler start")
	}
	start := time.Now()
	ts.stop(t)
	for range n {
		if err := recv(t, errs, "pending call failure"); !errors.Is(err, ErrConnClosed) {
			t.Fatalf("pending call got %v, want ErrConnClosed", err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("pending calls failed after %v", d)
	}
}

func TestInvokeHonoursDeadline(t *testing.T) {
	ts := startServer(t, nil)
	ts.HandleFunc(ReqPullMessage, func(ctx context.Context, _ *Conn, req *Command) *Command {
		<-ctx.Done()
		return nil
	})
	ts.HandleFunc(ReqSendMessage, echoHandler)
	cl := newTestClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqPullMessage, nil, nil))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Invoke = %v, want ErrTimeout wrapping DeadlineExceeded", err)
	}
	if d := time.Since(start); d < 90*time.Millisecond || d > 2*time.Second {
		t.Fatalf("Invoke returned after %v, want about 100ms", d)
	}
	// A timed-out call leaves the connection usable.
	if _, err := cl.Invoke(testCtx(t), ts.addr, NewRequest(ReqSendMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	cancelled, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	if _, err := cl.Invoke(cancelled, ts.addr, NewRequest(ReqSendMessage, nil, nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Invoke with cancelled ctx = %v", err)
	}
}

func TestDefaultInvokeTimeout(t *testing.T) {
	ctx, cancel := withDefaultTimeout(context.Background())
	defer cancel()
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > DefaultInvokeTimeout || time.Until(dl) < DefaultInvokeTimeout-time.Second {
		t.Fatalf("default deadline %v away, want %v", time.Until(dl), DefaultInvokeTimeout)
	}
	want := time.Now().Add(time.Hour)
	parent, pcancel := context.WithDeadline(context.Background(), want)
	defer pcancel()
	ctx2, cancel2 := withDefaultTimeout(parent)
	defer cancel2()
	if dl, _ := ctx2.Deadline(); !dl.Equal(want) {
		t.Fatalf("caller's deadline replaced: %v", dl)
	}
}

func TestInvokeAsyncCallbackExactlyOnce(t *testing.T) {
	ts := startServer(t, nil)
	ts.HandleFunc(ReqSendMessage, echoHandler)
	ts.HandleFunc(ReqPullMessage, func(ctx context.Context, _ *Conn, req *Command) *Command {
		<-ctx.Done()
		return nil
	})
	cl := newTestClient(t)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	cases := []struct {
		name string
		ctx  context.Context
		addr string
		code int16
		ok   bool
	}{
		{"success", testCtx(t), ts.addr, ReqSendMessage, true},
		{"timeout", short, ts.addr, ReqPullMessage, false},
		{"dial failure", testCtx(t), "127.0.0.1:1", ReqSendMessage, false},
	}
	var counts [3]atomic.Int32
	results := make(chan int, 10)
	for i, c := range cases {
		cl.InvokeAsync(c.ctx, c.addr, NewRequest(c.code, nil, nil), func(resp *Command, err error) {
			if (err == nil) != c.ok || (err == nil && resp == nil) {
				t.Errorf("%s: resp %v err %v", c.name, resp, err)
			}
			counts[i].Add(1)
			results <- i
		})
	}
	for range cases {
		recv(t, results, "callback")
	}
	_ = cl.Close()
	for i, c := range cases {
		if n := counts[i].Load(); n != 1 {
			t.Errorf("%s: callback ran %d times", c.name, n)
		}
	}
	called := make(chan error, 1)
	cl.InvokeAsync(testCtx(t), ts.addr, NewRequest(ReqSendMessage, nil, nil), func(_ *Command, err error) { called <- err })
	if err := recv(t, called, "callback after Close"); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestClientClosed(t *testing.T) {
	cl := newTestClient(t)
	_ = cl.Close()
	if _, err := cl.Invoke(testCtx(t), "127.0.0.1:1", NewRequest(1, nil, nil)); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("Invoke after Close = %v", err)
	}
	if err := cl.InvokeOneway(testCtx(t), "127.0.0.1:1", NewRequest(1, nil, nil)); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("InvokeOneway after Close = %v", err)
	}
}

func TestServerInitiatedRequestReachesClientHandler(t *testing.T) {
	ts := startServer(t, nil)
	conns := make(chan *Conn, 1)
	ts.HandleFunc(ReqHeartBeat, func(_ context.Context, c *Conn, req *Command) *Command {
		conns <- c
		return NewResponse(req, ResSuccess, "")
	})
	cl := newTestClient(t)
	notified := make(chan *Command, 1)
	cl.HandleFunc(ReqCheckTransactionState, func(_ context.Context, _ *Conn, req *Command) *Command {
		resp := NewResponse(req, ResSuccess, "")
		resp.ExtFields["commitOrRollback"] = "8"
		resp.ExtFields["msgId"] = req.ExtFields["msgId"]
		return resp
	})
	cl.HandleFunc(ReqNotifyConsumerIDsChanged, func(_ context.Context, _ *Conn, req *Command) *Command {
		notified <- req
		return nil
	})
	ctx := testCtx(t)
	// The client's own call is in flight on the same connection throughout.
	if _, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqHeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	sc := recv(t, conns, "server conn")

	resp, err := sc.Invoke(ctx, NewRequest(ReqCheckTransactionState, map[string]string{"msgId": "ABC"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.IsResponse() || resp.ExtFields["commitOrRollback"] != "8" || resp.ExtFields["msgId"] != "ABC" {
		t.Fatalf("check response %v", resp)
	}
	resp, err = sc.Invoke(ctx, NewRequest(ReqGetConsumerRunningInfo, nil, nil))
	if err != nil || resp.Code != ResRequestCodeNotSupported {
		t.Fatalf("unhandled server-initiated request: %v, %v", resp, err)
	}
	if err := sc.SendOneway(ctx, NewRequest(ReqNotifyConsumerIDsChanged, map[string]string{"consumerGroup": "g"}, nil)); err != nil {
		t.Fatal(err)
	}
	if req := recv(t, notified, "notify"); req.ExtFields["consumerGroup"] != "g" || !req.IsOneway() || req.IsResponse() {
		t.Fatalf("notify arrived as %v", req)
	}
}

func TestClientConfigValidate(t *testing.T) {
	if err := DefaultClientConfig().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	err := ClientConfig{}.Validate()
	for _, want := range []string{"DialTimeout", "MaxFrameSize", "WriteTimeout", "MaxConcurrentPerConn"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate of zero config = %v, want it to mention %s", err, want)
		}
	}
	if _, err := NewClient(ClientConfig{}); err == nil {
		t.Error("NewClient accepted an invalid config")
	}
}
