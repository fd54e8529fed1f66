package remoting

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawConn is a hand-driven client connection: it writes requests and reads
// whatever frames the server sends.
type rawConn struct {
	net.Conn
	br     *bufio.Reader
	opaque int32
}

// dialFrom connects to addr from the loopback address ip (any 127/8
// address is local on Linux), so tests can play several client hosts.
func dialFrom(t *testing.T, ip, addr string) (*rawConn, error) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: testTimeout}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(testTimeout))
	return &rawConn{Conn: nc, br: bufio.NewReader(nc)}, nil
}

func mustDialFrom(t *testing.T, ip, addr string) *rawConn {
	t.Helper()
	rc, err := dialFrom(t, ip, addr)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// send writes a request with the next opaque.
func (rc *rawConn) send(code int16) error {
	rc.opaque++
	req := NewRequest(code, nil, nil)
	req.Opaque = rc.opaque
	return WriteCommand(rc, req)
}

func (rc *rawConn) read() (*Command, error) { return ReadCommand(rc.br, 0) }

// call sends a request and reads one frame back.
func (rc *rawConn) call(code int16) (*Command, error) {
	if err := rc.send(code); err != nil {
		return nil, err
	}
	return rc.read()
}

// expectRefusal checks that rc gets one SYSTEM_BUSY frame with the remark,
// then the end of the stream.
func (rc *rawConn) expectRefusal(t *testing.T, remark string) {
	t.Helper()
	resp, err := rc.read()
	if err != nil || !resp.IsResponse() || resp.Code != ResSystemBusy || resp.Remark != remark {
		t.Fatalf("refused connection read %v, %v; want SYSTEM_BUSY %q", resp, err, remark)
	}
	if _, err := rc.read(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the refusal read %v, want EOF", err)
	}
}

func okHandler(_ context.Context, _ *Conn, req *Command) *Command {
	return NewResponse(req, ResSuccess, "")
}

func (ts *testServer) hasLog(parts ...string) bool {
	for _, line := range strings.Split(ts.logs.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestConnsPerIPLimit: connections from 127.0.0.1 up to MaxConnsPerIP are
// served; the next one from 127.0.0.1 gets a SYSTEM_BUSY frame naming the
// limit and is closed, even though it had sent a request (so the close
// must not reset the frame away), and the SDK's call on such a connection
// fails with that remark; 127.0.0.2 is unaffected; a closed connection
// frees its place.
func TestConnsPerIPLimit(t *testing.T) {
	const limit = 3
	ts := startServer(t, func(c *ServerConfig) { c.Limits.MaxConnsPerIP = limit })
	ts.HandleFunc(ReqHeartBeat, okHandler)
	var conns []*rawConn
	for i := range limit {
		rc := mustDialFrom(t, "127.0.0.1", ts.addr)
		if resp, err := rc.call(ReqHeartBeat); err != nil || resp.Code != ResSuccess {
			t.Fatalf("connection %d within the limit: %v, %v", i, resp, err)
		}
		conns = append(conns, rc)
	}
	const remark = "too many connections from 127.0.0.1 (limit 3)"
	over := mustDialFrom(t, "127.0.0.1", ts.addr)
	if err := over.send(ReqHeartBeat); err != nil {
		t.Fatal(err)
	}
	over.expectRefusal(t, remark)
	waitFor(t, "refusal log", func() bool { return ts.hasLog("refusing connection", remark) })

	_, err := newTestClient(t).Invoke(testCtx(t), ts.addr, NewRequest(ReqHeartBeat, nil, nil))
	var re *ResponseError
	if !errors.Is(err, ErrConnClosed) || !errors.As(err, &re) || re.Code != ResSystemBusy || re.Remark != remark {
		t.Fatalf("SDK call over the limit: %v; want ErrConnClosed carrying the refusal", err)
	}

	other := mustDialFrom(t, "127.0.0.2", ts.addr)
	if resp, err := other.call(ReqHeartBeat); err != nil || resp.Code != ResSuccess {
		t.Fatalf("127.0.0.2 affected by 127.0.0.1's limit: %v, %v", resp, err)
	}
	for i, rc := range conns {
		if resp, err := rc.call(ReqHeartBeat); err != nil || resp.Code != ResSuccess {
			t.Fatalf("admitted connection %d broken by the refusals: %v, %v", i, resp, err)
		}
	}
	if got := ts.LimitStats().RefusedConns; got != 2 {
		t.Fatalf("RefusedConns = %d, want 2", got)
	}

	_ = conns[0].Close()
	waitFor(t, "a place from 127.0.0.1 to free up", func() bool {
		rc, err := dialFrom(t, "127.0.0.1", ts.addr)
		if err != nil {
			return false
		}
		defer rc.Close()
		resp, err := rc.call(ReqHeartBeat)
		return err == nil && resp.Code == ResSuccess
	})
}

// TestMaxConnsLimit: MaxConns counts connections from every address.
func TestMaxConnsLimit(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.Limits.MaxConns, c.Limits.MaxConnsPerIP = 2, 0 })
	ts.HandleFunc(ReqHeartBeat, okHandler)
	var first *rawConn
	for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		rc := mustDialFrom(t, ip, ts.addr)
		if resp, err := rc.call(ReqHeartBeat); err != nil || resp.Code != ResSuccess {
			t.Fatalf("connection from %s within the limit: %v, %v", ip, resp, err)
		}
		if first == nil {
			first = rc
		}
	}
	mustDialFrom(t, "127.0.0.3", ts.addr).expectRefusal(t, "too many connections (limit 2)")
	if got := ts.LimitStats().RefusedConns; got != 1 {
		t.Fatalf("RefusedConns = %d, want 1", got)
	}
	_ = first.Close()
	waitFor(t, "a place to free up", func() bool {
		rc, err := dialFrom(t, "127.0.0.3", ts.addr)
		if err != nil {
			return false
		}
		defer rc.Close()
		resp, err := rc.call(ReqHeartBeat)
		return err == nil && resp.Code == ResSuccess
	})
}

// TestRequestRateFloodDisconnected: a connection sending far above
// MaxRequestRate is answered SYSTEM_BUSY naming the limit and, once it has
// been refused more than MaxRateRefusals times, disconnected; meanwhile a
// second connection well under the rate has every request served.
func TestRequestRateFloodDisconnected(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) {
		c.Limits.MaxRequestRate, c.Limits.MaxRequestBurst = 20, 5
		c.Limits.MaxRateRefusals, c.Limits.RateRefusalWindow = 600, time.Minute
	})
	ts.HandleFunc(ReqHeartBeat, okHandler)

	flood := mustDialFrom(t, "127.0.0.1", ts.addr)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // about 500 requests a second until the server hangs up
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if flood.send(ReqHeartBeat) != nil {
				return
			}
		}
	}()
	defer wg.Wait()
	defer close(stop)

	polite := make(chan error, 1)
	cl := newTestClient(t)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for range 10 {
			<-tick.C
			resp, err := cl.Invoke(context.Background(), ts.addr, NewRequest(ReqHeartBeat, nil, nil))
			if err == nil {
				err = AsError(resp)
			}
			if err != nil {
				polite <- err
				return
			}
		}
		polite <- nil
	}()

	var ok, busy int
	for {
		resp, err := flood.read()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
				t.Fatalf("flood read: %v, want the server to hang up", err)
			}
			break
		}
		switch resp.Code {
		case ResSuccess:
			ok++
		case ResSystemBusy:
			busy++
			if !strings.Contains(resp.Remark, "limit of 20/s (burst 5)") {
				t.Fatalf("refusal remark %q does not name the limit", resp.Remark)
			}
		default:
			t.Fatalf("flood got %v", resp)
		}
	}
	if err := recv(t, polite, "polite requests"); err != nil {
		t.Fatalf("polite connection refused beside a flood: %v", err)
	}
	st := ts.LimitStats()
	if busy == 0 || ok == 0 || st.RateDisconnects != 1 || st.RateLimited <= 600 {
		t.Fatalf("flood saw %d served, %d refused; stats %+v", ok, busy, st)
	}
	if !ts.hasLog("disconnecting a connection that keeps exceeding its request rate") {
		t.Fatal("no log line for the disconnect")
	}
}

// TestHeaderOverLimitRefused: a frame whose header length exceeds
// MaxHeaderSize closes its connection with a clear log line, before the
// header is read; a header within the limit and other connections are
// served.
func TestHeaderOverLimitRefused(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.Limits.MaxHeaderSize = 2048 })
	ts.HandleFunc(ReqSendMessage, echoHandler)
	cl := newTestClient(t)
	ctx := testCtx(t)
	big := strings.Repeat("x", 1500)
	if resp, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqSendMessage, map[string]string{"k": big}, nil)); err != nil || resp.ExtFields["k"] != big {
		t.Fatalf("header within the limit: %v, %v", resp, err)
	}

	raw := mustDialFrom(t, "127.0.0.1", ts.addr)
	// Only the two length words: the server must not wait for the header.
	frame := binary.BigEndian.AppendUint32(nil, 4+4096)
	frame = binary.BigEndian.AppendUint32(frame, 4096)
	if _, err := raw.Write(frame); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.read(); !errors.Is(err, io.EOF) {
		t.Fatalf("read after an oversized header = %v, want EOF", err)
	}
	waitFor(t, "log line", func() bool {
		return ts.hasLog("bad frame", "header too large: 4096 bytes, limit 2048", "remote="+raw.LocalAddr().String())
	})
	if resp, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqSendMessage, map[string]string{"k": "after"}, nil)); err != nil || resp.ExtFields["k"] != "after" {
		t.Fatalf("other connection broken: %v, %v", resp, err)
	}
	if got := ts.LimitStats().HeaderRefused; got != 1 {
		t.Fatalf("HeaderRefused = %d, want 1", got)
	}
}

func TestReadCommandHeaderLimit(t *testing.T) {
	frame, err := Encode(NewRequest(ReqSendMessage, map[string]string{"k": strings.Repeat("v", 100)}, []byte("body")))
	if err != nil {
		t.Fatal(err)
	}
	hl := int(binary.BigEndian.Uint32(frame[4:]) & maxHeaderLen)
	if cmd, err := readCommand(bytes.NewReader(frame), 0, hl); err != nil || string(cmd.Body) != "body" {
		t.Fatalf("header at the limit: %v, %v", cmd, err)
	}
	if _, err := readCommand(bytes.NewReader(frame), 0, hl-1); !errors.Is(err, ErrHeaderTooLarge) {
		t.Fatalf("header over the limit: %v, want ErrHeaderTooLarge", err)
	}
	if _, err := readCommand(bytes.NewReader(frame[:6]), 0, hl); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("stream ending in the header word: %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestIdleConnectionClosed: a connection silent for IdleTimeout is closed
// and logged; one that keeps sending is not, and neither is one whose only
// request is a parked long poll, silent for two idle periods.
func TestIdleConnectionClosed(t *testing.T) {
	const idle = 500 * time.Millisecond
	ts := startServer(t, func(c *ServerConfig) { c.Limits.IdleTimeout = idle })
	ts.HandleFunc(ReqHeartBeat, okHandler)
	release := make(chan struct{})
	ts.HandleFunc(ReqPullMessage, func(ctx context.Context, _ *Conn, req *Command) *Command {
		Park(ctx)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return NewResponse(req, ResPullNotFound, "")
	})

	held := mustDialFrom(t, "127.0.0.1", ts.addr)
	if err := held.send(ReqPullMessage); err != nil {
		t.Fatal(err)
	}
	active := mustDialFrom(t, "127.0.0.1", ts.addr)
	activeDone, activeErr := make(chan struct{}), make(chan error, 1)
	go func() {
		tick := time.NewTicker(idle / 5)
		defer tick.Stop()
		for {
			select {
			case <-activeDone:
				activeErr <- nil
				return
			case <-tick.C:
			}
			resp, err := active.call(ReqHeartBeat)
			if err == nil {
				err = AsError(resp)
			}
			if err != nil {
				activeErr <- err
				return
			}
		}
	}()

	for i := range 2 { // one after the other: the held poll is silent for both
		silent := mustDialFrom(t, "127.0.0.1", ts.addr)
		start := time.Now()
		if resp, err := silent.call(ReqHeartBeat); err != nil || resp.Code != ResSuccess {
			t.Fatalf("idle connection %d: %v, %v", i, resp, err)
		}
		if _, err := silent.read(); !errors.Is(err, io.EOF) {
			t.Fatalf("idle connection %d read %v, want EOF", i, err)
		}
		if d := time.Since(start); d < idle {
			t.Fatalf("idle connection %d closed after %v, before IdleTimeout %v", i, d, idle)
		}
	}
	close(activeDone)
	if err := recv(t, activeErr, "active connection"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if resp, err := held.read(); err != nil || resp.Code != ResPullNotFound {
		t.Fatalf("held long poll: %v, %v; want its response on the open connection", resp, err)
	}
	if resp, err := held.call(ReqHeartBeat); err != nil || resp.Code != ResSuccess {
		t.Fatalf("connection of the held poll: %v, %v", resp, err)
	}
	if got := ts.LimitStats().IdleClosed; got != 2 {
		t.Fatalf("IdleClosed = %d, want 2", got)
	}
	if !ts.hasLog("closing idle connection") {
		t.Fatal("no log line for the idle close")
	}
}

func TestLimitsValidate(t *testing.T) {
	if err := DefaultLimits().validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if err := (Limits{}).validate(); err != nil {
		t.Fatalf("zero (no limits) invalid: %v", err)
	}
	cfg := DefaultServerConfig()
	cfg.Limits = Limits{MaxConnsPerIP: -1, MaxConns: -1, MaxRequestRate: -1, MaxRequestBurst: -1,
		MaxRateRefusals: -1, MaxHeaderSize: 10, IdleTimeout: -time.Second}
	err := cfg.Validate()
	for _, want := range []string{"MaxConnsPerIP", "MaxConns ", "MaxRequestRate", "MaxRequestBurst", "MaxRateRefusals", "MaxHeaderSize", "IdleTimeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to mention %s", err, want)
		}
	}
	cfg.Limits = Limits{MaxRequestRate: 10, MaxRateRefusals: 5}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "RateRefusalWindow") {
		t.Errorf("Validate = %v, want it to mention RateRefusalWindow", err)
	}
}

// TestRateLimitedOnewayDropped: a oneway request over the rate is dropped
// without an answer; a two-way one is answered SYSTEM_BUSY with its own
// opaque.
func TestRateLimitedOnewayDropped(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.Limits.MaxRequestRate = 0.01 }) // burst: 1
	served := make(chan int32, 4)
	ts.HandleFunc(ReqHeartBeat, func(_ context.Context, _ *Conn, req *Command) *Command {
		served <- req.Opaque
		return NewResponse(req, ResSuccess, "")
	})
	rc := mustDialFrom(t, "127.0.0.1", ts.addr)
	for op := int32(1); op <= 3; op++ {
		req := NewRequest(ReqHeartBeat, nil, nil)
		req.Opaque, req.Flag = op, FlagOneway
		if err := WriteCommand(rc, req); err != nil {
			t.Fatal(err)
		}
	}
	rc.opaque = 3
	resp, err := rc.call(ReqHeartBeat)
	if err != nil || resp.Opaque != 4 || resp.Code != ResSystemBusy || !strings.Contains(resp.Remark, "limit of 0.01/s (burst 1)") {
		t.Fatalf("first frame back: %v, %v; want SYSTEM_BUSY for opaque 4 and nothing for the oneways", resp, err)
	}
	if op := recv(t, served, "the one request within the burst"); op != 1 {
		t.Fatalf("served opaque %d, want 1", op)
	}
	if got := ts.LimitStats().RateLimited; got != 3 {
		t.Fatalf("RateLimited = %d, want 3", got)
	}
}
