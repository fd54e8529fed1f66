package remoting

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// testTimeout bounds every wait in these tests; reaching it is a failure.
const testTimeout = 10 * time.Second

// logSink collects log output so tests can assert on it, and echoes it to
// the test log.
type logSink struct {
	t   testing.TB
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	s.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func newTestLogger(t testing.TB) (hclog.Logger, *logSink) {
	sink := &logSink{t: t}
	return hclog.New(&hclog.LoggerOptions{Name: "test", Output: sink, Level: hclog.Debug}), sink
}

type testServer struct {
	*Server
	addr string
	logs *logSink
	done chan error
}

func startServer(t *testing.T, mod func(*ServerConfig)) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, mod)
}

func serveOn(t *testing.T, ln net.Listener, mod func(*ServerConfig)) *testServer {
	t.Helper()
	logger, sink := newTestLogger(t)
	cfg := DefaultServerConfig()
	cfg.Logger = logger
	if mod != nil {
		mod(&cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, addr: ln.Addr().String(), logs: sink, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(ln) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

// stop closes the server and checks Serve returned ErrServerClosed. It is
// idempotent so tests may stop a server early.
func (ts *testServer) stop(t *testing.T) {
	t.Helper()
	_ = ts.Close()
	select {
	case err, ok := <-ts.done:
		if ok && !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		if ok {
			close(ts.done)
		}
	case <-time.After(testTimeout):
		t.Error("Serve did not return after Close")
	}
}

func newTestClient(t *testing.T) *Client {
	t.Helper()
	return newProbingClient(t, DefaultClientConfig().ProbeAfter)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or testTimeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recv waits for a value on ch or fails the test.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func echoHandler(_ context.Context, _ *Conn, req *Command) *Command {
	resp := NewResponse(req, ResSuccess, "echo")
	for k, v := range req.ExtFields {
		resp.ExtFields[k] = v
	}
	resp.Body = req.Body
	return resp
}

// dialRaw opens a plain TCP connection for writing hand-made bytes.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(testTimeout))
	return nc
}
