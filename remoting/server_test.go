package remoting

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestServerAnswersInRequestSerialisation(t *testing.T) {
	ts := startServer(t, nil)
	ts.HandleFunc(ReqSendMessage, echoHandler)
	cl := newTestClient(t)
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			req := NewRequest(ReqSendMessage, map[string]string{"topic": "T", "ключ": "値"}, []byte("body"))
			req.SerializeType = st
			resp, err := cl.Invoke(testCtx(t), ts.addr, req)
			if err != nil {
				t.Fatal(err)
			}
			if !resp.IsResponse() || resp.SerializeType != st || resp.Code != ResSuccess ||
				resp.ExtFields["ключ"] != "値" || string(resp.Body) != "body" || resp.Remark != "echo" {
				t.Fatalf("response %v st=%v", resp, resp.SerializeType)
			}
			if req.Opaque != 0 || req.Flag != 0 {
				t.Fatalf("Invoke modified the caller's command: %v", req)
			}
		})
	}
}

func TestHeldRequestDoesNotBlockOthersOnSameConn(t *testing.T) {
	ts := startServer(t, nil)
	started := make(chan struct{})
	release := make(chan struct{})
	ts.HandleFunc(ReqPullMessage, func(ctx context.Context, _ *Conn, req *Command) *Command {
		close(started)
		<-release
		return NewResponse(req, ResPullNotFound, "")
	})
	ts.HandleFunc(ReqSendMessage, echoHandler)
	cl := newTestClient(t)
	ctx := testCtx(t)

	pulled := make(chan *Command, 1)
	cl.InvokeAsync(ctx, ts.addr, NewRequest(ReqPullMessage, nil, nil), func(resp *Command, err error) {
		if err != nil {
			t.Errorf("pull: %v", err)
		}
		pulled <- resp
	})
	recv(t, started, "pull handler to start")
	resp, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqSendMessage, map[string]string{"n": "1"}, nil))
	if err != nil || resp.ExtFields["n"] != "1" {
		t.Fatalf("send while pull held: %v, %v", resp, err)
	}
	select {
	case <-pulled:
		t.Fatal("pull answered before release")
	default:
	}
	close(release)
	if got := recv(t, pulled, "pull response"); got == nil || got.Code != ResPullNotFound {
		t.Fatalf("pull response %v", got)
	}
}

func TestResponsesOutOfOrder(t *testing.T) {
	ts := startServer(t, nil)
	const n = 5
	var gates [n]chan struct{}
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	arrived := make(chan int, n)
	ts.HandleFunc(ReqSendMessage, func(ctx context.Context, c *Conn, req *Command) *Command {
		i, _ := strconv.Atoi(req.ExtFields["i"])
		arrived <- i
		<-gates[i]
		return echoHandler(ctx, c, req)
	})
	cl := newTestClient(t)
	ctx := testCtx(t)
	type result struct {
		sent int
		resp *Command
		err  error
	}
	results := make(chan result, n)
	for i := range n {
		cl.InvokeAsync(ctx, ts.addr, NewRequest(ReqSendMessage, map[string]string{"i": strconv.Itoa(i)}, nil),
			func(resp *Command, err error) { results <- result{i, resp, err} })
	}
	for range n {
		recv(t, arrived, "handler start")
	}
	for i := n - 1; i >= 0; i-- {
		close(gates[i])
		r := recv(t, results, "response")
		if r.err != nil || r.sent != i || r.resp.ExtFields["i"] != strconv.Itoa(i) {
			t.Fatalf("released %d, got response for %d: %v, %v", i, r.sent, r.resp, r.err)
		}
	}
}

func TestUnknownCode(t *testing.T) {
	ts := startServer(t, nil)
	resp, err := newTestClient(t).Invoke(testCtx(t), ts.addr, NewRequest(999, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != ResRequestCodeNotSupported || !strings.Contains(resp.Remark, "999") {
		t.Fatalf("response %v, want REQUEST_CODE_NOT_SUPPORTED naming 999", resp)
	}
	var re *ResponseError
	if !errors.As(AsError(resp), &re) || re.Code != ResRequestCodeNotSupported {
		t.Fatalf("AsError = %v", AsError(resp))
	}
}

func TestPanickingHandler(t *testing.T) {
	ts := startServer(t, nil)
	ts.HandleFunc(ReqHeartBeat, func(context.Context, *Conn, *Command) *Command { panic("kaboom") })
	ts.HandleFunc(ReqSendMessage, echoHandler)
	cl := newTestClient(t)
	ctx := testCtx(t)
	resp, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqHeartBeat, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != ResSystemError || !strings.Contains(resp.Remark, "kaboom") {
		t.Fatalf("response %v, want SYSTEM_ERROR with the panic", resp)
	}
	if !strings.Contains(ts.logs.String(), "handler panicked") {
		t.Error("panic not logged")
	}
	if resp, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqSendMessage, nil, nil)); err != nil || resp.Code != ResSuccess {
		t.Fatalf("connection unusable after panic: %v, %v", resp, err)
	}
}

func TestBadFramesCloseOnlyThatConn(t *testing.T) {
	lenWord := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	tests := []struct {
		name string
		in   []byte
		log  string
	}{
		{"oversize frame", lenWord(4096), "frame too large"},
		{"negative length", lenWord(0xfffffff0), "malformed frame"},
		{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "frame too large"},
		{"header past frame", append(lenWord(8), 0, 0, 0, 9, 'a', 'b', 'c', 'd'), "malformed frame"},
		{"json garbage", append(lenWord(8), 0, 0, 0, 4, 'a', 'b', 'c', 'd'), "bad header"},
		{"unknown serialize type", append(lenWord(6), 5, 0, 0, 2, '{', '}'), "bad header"},
	}
	ts := startServer(t, func(c *ServerConfig) { c.MaxFrameSize = 1024 })
	ts.HandleFunc(ReqSendMessage, echoHandler)
	cl := newTestClient(t)
	ctx := testCtx(t)
	if _, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqSendMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := dialRaw(t, ts.addr)
			if _, err := raw.Write(tt.in); err != nil {
				t.Fatal(err)
			}
			if n, err := raw.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Fatalf("raw read = %d, %v; want the server to close (EOF)", n, err)
			}
			want := "remote=" + raw.LocalAddr().String()
			waitFor(t, "log line", func() bool {
				for _, line := range strings.Split(ts.logs.String(), "\n") {
					if strings.Contains(line, "bad frame") && strings.Contains(line, want) && strings.Contains(line, tt.log) {
						return true
					}
				}
				return false
			})
			resp, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqSendMessage, map[string]string{"k": tt.name}, nil))
			if err != nil || resp.ExtFields["k"] != tt.name {
				t.Fatalf("other connection broken: %v, %v", resp, err)
			}
		})
	}
}

func TestOnewayGetsNoResponse(t *testing.T) {
	ts := startServer(t, nil)
	got := make(chan *Command, 2)
	ts.HandleFunc(ReqUpdateConsumerOffset, func(_ context.Context, _ *Conn, req *Command) *Command {
		got <- req
		return NewResponse(req, ResSuccess, "must not be sent")
	})
	ts.HandleFunc(ReqSendMessage, echoHandler)

	raw := dialRaw(t, ts.addr)
	send := func(code int16, opaque, flag int32) {
		cmd := NewRequest(code, nil, nil)
		cmd.Opaque, cmd.Flag = opaque, flag
		if err := WriteCommand(raw, cmd); err != nil {
			t.Fatal(err)
		}
	}
	send(ReqUpdateConsumerOffset, 1, FlagOneway)
	send(999, 2, FlagOneway) // unknown code: no REQUEST_CODE_NOT_SUPPORTED either
	send(ReqSendMessage, 3, 0)
	if req := recv(t, got, "oneway request"); !req.IsOneway() {
		t.Fatalf("handler saw flag %d", req.Flag)
	}
	br := bufio.NewReader(raw)
	var opaques []int32
	readOne := func() error {
		cmd, err := ReadCommand(br, 0)
		if err == nil {
			opaques = append(opaques, cmd.Opaque)
		}
		return err
	}
	if err := readOne(); err != nil {
		t.Fatal(err)
	}
	// Shutdown returns only after every handler's write finished, so reading
	// to EOF afterwards sees everything the server would ever send.
	ctx := testCtx(t)
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for readOne() == nil {
	}
	if fmt.Sprint(opaques) != "[3]" {
		t.Fatalf("responses for opaques %v, want only [3]", opaques)
	}

	// The client's oneway sets the bit.
	ts2 := startServer(t, nil)
	ts2.HandleFunc(ReqUpdateConsumerOffset, func(_ context.Context, _ *Conn, req *Command) *Command {
		got <- req
		return nil
	})
	if err := newTestClient(t).InvokeOneway(ctx, ts2.addr, NewRequest(ReqUpdateConsumerOffset, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if req := recv(t, got, "client oneway"); !req.IsOneway() || req.IsResponse() {
		t.Fatalf("client oneway arrived with flag %d", req.Flag)
	}
}

func TestSystemBusyBeyondPerConnLimit(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.MaxConcurrentPerConn, c.BusyWait = 1, 50*time.Millisecond })
	started, release := make(chan struct{}), make(chan struct{})
	ts.HandleFunc(ReqPullMessage, func(_ context.Context, _ *Conn, req *Command) *Command {
		close(started)
		<-release
		return NewResponse(req, ResSuccess, "")
	})
	cl := newTestClient(t)
	ctx := testCtx(t)
	first := make(chan error, 1)
	cl.InvokeAsync(ctx, ts.addr, NewRequest(ReqPullMessage, nil, nil), func(_ *Command, err error) { first <- err })
	recv(t, started, "first handler")
	resp, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqPullMessage, nil, nil))
	if err != nil || resp.Code != ResSystemBusy || !strings.Contains(resp.Remark, "limit 1") {
		t.Fatalf("second request: %v, %v; want SYSTEM_BUSY", resp, err)
	}
	close(release)
	if err := recv(t, first, "first response"); err != nil {
		t.Fatal(err)
	}
}

func TestShutdownWaitsForInFlightHandler(t *testing.T) {
	ts := startServer(t, nil)
	started, release := make(chan struct{}), make(chan struct{})
	ts.HandleFunc(ReqPullMessage, func(_ context.Context, _ *Conn, req *Command) *Command {
		close(started)
		<-release
		return NewResponse(req, ResSuccess, "finished")
	})
	cl := newTestClient(t)
	ctx := testCtx(t)
	type result struct {
		resp *Command
		err  error
	}
	held := make(chan result, 1)
	cl.InvokeAsync(ctx, ts.addr, NewRequest(ReqPullMessage, nil, nil), func(r *Command, err error) { held <- result{r, err} })
	recv(t, started, "handler start")

	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(ctx) }()
	// Draining: new requests on the open connection are refused retriably.
	waitFor(t, "draining", func() bool {
		resp, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqSendMessage, nil, nil))
		return err == nil && resp.Code == ResServiceNotAvailable
	})
	if _, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		t.Error("listener still accepting during shutdown")
	}
	close(release)
	r := recv(t, held, "held response")
	if r.err != nil || r.resp.Remark != "finished" {
		t.Fatalf("in-flight request cut short: %v, %v", r.resp, r.err)
	}
	if err := recv(t, shut, "Shutdown"); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
}

func TestShutdownDeadlineCancelsHandlers(t *testing.T) {
	ts := startServer(t, nil)
	started := make(chan struct{})
	cancelled := make(chan struct{})
	ts.HandleFunc(ReqPullMessage, func(ctx context.Context, _ *Conn, req *Command) *Command {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return NewResponse(req, ResPullNotFound, "")
	})
	cl := newTestClient(t)
	callErr := make(chan error, 1)
	cl.InvokeAsync(testCtx(t), ts.addr, NewRequest(ReqPullMessage, nil, nil), func(_ *Command, err error) { callErr <- err })
	recv(t, started, "handler start")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ts.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	recv(t, cancelled, "handler context cancelled")
	if err := recv(t, callErr, "call error"); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("pending call got %v, want ErrConnClosed", err)
	}
	if err := ts.Serve(mustListen(t)); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Shutdown = %v", err)
	}
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func TestOnConnCloseSeesConnState(t *testing.T) {
	ts := startServer(t, nil)
	ts.HandleFunc(ReqHeartBeat, func(_ context.Context, c *Conn, req *Command) *Command {
		c.SetValue("clientID", req.ExtFields["clientID"])
		return NewResponse(req, ResSuccess, "")
	})
	closed := make(chan string, 1)
	var calls atomic.Int32
	ts.OnConnClose(func(c *Conn) {
		calls.Add(1)
		id, _ := c.Value("clientID").(string)
		closed <- id
	})
	cl := newTestClient(t)
	if _, err := cl.Invoke(testCtx(t), ts.addr, NewRequest(ReqHeartBeat, map[string]string{"clientID": "10.0.0.1@42"}, nil)); err != nil {
		t.Fatal(err)
	}
	cl.CloseConn(ts.addr)
	if id := recv(t, closed, "OnConnClose"); id != "10.0.0.1@42" {
		t.Fatalf("OnConnClose saw clientID %q", id)
	}
	ts.stop(t)
	if n := calls.Load(); n != 1 {
		t.Fatalf("OnConnClose ran %d times", n)
	}
}

func TestConnAccessors(t *testing.T) {
	ts := startServer(t, nil)
	seen := make(chan *Conn, 1)
	ts.HandleFunc(ReqHeartBeat, func(_ context.Context, c *Conn, req *Command) *Command {
		seen <- c
		return NewResponse(req, ResSuccess, "")
	})
	waitFor(t, "Serve to record its listener", func() bool { return ts.Addr() != nil })
	if ts.Addr().String() != ts.addr {
		t.Fatalf("Addr() = %v, want %s", ts.Addr(), ts.addr)
	}
	cl := newTestClient(t)
	if _, err := cl.Invoke(testCtx(t), ts.addr, NewRequest(ReqHeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	c := recv(t, seen, "conn")
	if c.ID() == 0 || c.LocalAddr().String() != ts.addr || c.RemoteAddr() == nil || c.Value("missing") != nil {
		t.Fatalf("conn id=%d local=%v remote=%v", c.ID(), c.LocalAddr(), c.RemoteAddr())
	}
	_ = c.Close()
	recv(t, c.Done(), "conn done")
}

func TestServerConfigValidate(t *testing.T) {
	if err := DefaultServerConfig().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	err := ServerConfig{}.Validate()
	for _, want := range []string{"MaxFrameSize", "MaxConcurrentPerConn", "WriteTimeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate of zero config = %v, want it to mention %s", err, want)
		}
	}
	if _, err := NewServer(ServerConfig{}); err == nil {
		t.Error("NewServer accepted an invalid config")
	}
}

func TestListenAndServe(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.Logger, _ = newTestLogger(t)
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.HandleFunc(ReqSendMessage, echoHandler)
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe("127.0.0.1:0") }()
	waitFor(t, "listener", func() bool { return s.Addr() != nil })
	if _, err := newTestClient(t).Invoke(testCtx(t), s.Addr().String(), NewRequest(ReqSendMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if err := recv(t, done, "ListenAndServe"); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("ListenAndServe = %v, want ErrServerClosed", err)
	}
	if err := s.ListenAndServe("256.0.0.1:bad"); err == nil || errors.Is(err, ErrServerClosed) {
		t.Fatalf("ListenAndServe on a bad address = %v", err)
	}
}

// TestRequestWaitsForAFreeHandler: at the per-connection limit a request
// waits (the connection is not read) and runs once a handler ends.
func TestRequestWaitsForAFreeHandler(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.MaxConcurrentPerConn, c.BusyWait = 1, time.Minute })
	started, release := make(chan struct{}, 2), make(chan struct{})
	ts.HandleFunc(ReqPullMessage, func(_ context.Context, _ *Conn, req *Command) *Command {
		started <- struct{}{}
		<-release
		return NewResponse(req, ResSuccess, "")
	})
	cl := newTestClient(t)
	ctx := testCtx(t)
	first := make(chan error, 1)
	cl.InvokeAsync(ctx, ts.addr, NewRequest(ReqPullMessage, nil, nil), func(_ *Command, err error) { first <- err })
	recv(t, started, "first handler")
	second := make(chan *Command, 1)
	cl.InvokeAsync(ctx, ts.addr, NewRequest(ReqPullMessage, nil, nil), func(r *Command, err error) {
		if err != nil {
			t.Errorf("second request: %v", err)
		}
		second <- r
	})
	select {
	case <-started:
		t.Fatal("second handler started while the first held the only place")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := recv(t, first, "first response"); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, second, "second response"); r == nil || r.Code != ResSuccess {
		t.Fatalf("second request answered %v, want SUCCESS after waiting", r)
	}
}

// TestParkedHandlerFreesItsPlace: a handler that parks (a held long poll)
// leaves its connection's place to other requests.
func TestParkedHandlerFreesItsPlace(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.MaxConcurrentPerConn, c.BusyWait = 1, 50*time.Millisecond })
	parked, release := make(chan struct{}), make(chan struct{})
	ts.HandleFunc(ReqPullMessage, func(ctx context.Context, _ *Conn, req *Command) *Command {
		Park(ctx)
		Park(ctx) // a second call gives nothing back twice
		close(parked)
		<-release
		return NewResponse(req, ResSuccess, "")
	})
	ts.HandleFunc(ReqHeartBeat, func(_ context.Context, _ *Conn, req *Command) *Command {
		return NewResponse(req, ResSuccess, "")
	})
	cl := newTestClient(t)
	ctx := testCtx(t)
	held := make(chan error, 1)
	cl.InvokeAsync(ctx, ts.addr, NewRequest(ReqPullMessage, nil, nil), func(_ *Command, err error) { held <- err })
	recv(t, parked, "parked handler")
	for i := range 3 {
		resp, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqHeartBeat, nil, nil))
		if err != nil || resp.Code != ResSuccess {
			t.Fatalf("request %d beside a parked handler: %v, %v; want SUCCESS", i, resp, err)
		}
	}
	close(release)
	if err := recv(t, held, "parked response"); err != nil {
		t.Fatal(err)
	}
}
