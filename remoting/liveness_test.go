package remoting

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// frozenPeer accepts connections and reads their frames but never answers:
// a paused process or a partition that drops packets, seen from a client.
type frozenPeer struct {
	addr    string
	accepts atomic.Int32
	mu      sync.Mutex
	codes   []int16 // of the frames received, in order
}

func startFrozenPeer(t *testing.T) *frozenPeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &frozenPeer{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var conns sync.Map
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepts.Add(1)
			conns.Store(nc, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				br := bufio.NewReader(nc)
				for {
					cmd, err := ReadCommand(br, DefaultMaxFrameSize)
					if err != nil {
						return
					}
					p.mu.Lock()
					p.codes = append(p.codes, cmd.Code)
					p.mu.Unlock()
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Range(func(k, _ any) bool { _ = k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	return p
}

func (p *frozenPeer) received(code int16) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.codes {
		if c == code {
			n++
		}
	}
	return n
}

// countingListener counts the connections a server accepted.
type countingListener struct {
	net.Listener
	n atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return nc, err
}

func startCountingServer(t *testing.T, mod func(*ServerConfig)) (*testServer, *countingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	return serveOn(t, cl, mod), cl
}

func newProbingClient(t *testing.T, probeAfter time.Duration) *Client {
	t.Helper()
	logger, _ := newTestLogger(t)
	cfg := DefaultClientConfig()
	cfg.Logger = logger
	cfg.ProbeAfter = probeAfter
	cl, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// TestPingAnsweredWhileHandlersAreBusy: a RAFTMQ_PING is answered SUCCESS
// with its opaque by the read loop, even while the connection's only
// handler slot is taken by a request that never ends.
func TestPingAnsweredWhileHandlersAreBusy(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.MaxConcurrentPerConn = 1 })
	ts.HandleFunc(ReqSendMessage, func(ctx context.Context, _ *Conn, _ *Command) *Command {
		<-ctx.Done()
		return nil
	})
	nc := dialRaw(t, ts.addr)
	for i, req := range []*Command{NewRequest(ReqSendMessage, nil, nil), NewRequest(ReqPing, nil, nil)} {
		req.Opaque = int32(i + 1)
		b, err := Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := ReadCommand(bufio.NewReader(nc), DefaultMaxFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.IsResponse() || resp.Opaque != 2 || resp.Code != ResSuccess {
		t.Fatalf("answer %v, want the ping's (opaque 2) SUCCESS", resp)
	}
}

// TestSilentPeerFailsHeldCallAfterProbe: a call with a long deadline to a
// peer that never answers sends a probe after ProbeAfter and fails with
// ErrConnClosed about ProbeAfter later, long before its deadline.
func TestSilentPeerFailsHeldCallAfterProbe(t *testing.T) {
	peer := startFrozenPeer(t)
	const probeAfter = 200 * time.Millisecond
	cl := newProbingClient(t, probeAfter)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := cl.Invoke(ctx, peer.addr, NewRequest(ReqPullMessage, nil, nil))
	took := time.Since(start)
	if !errors.Is(err, ErrConnClosed) || !strings.Contains(err.Error(), "liveness probe") {
		t.Fatalf("held call to a silent peer: %v, want ErrConnClosed after an unanswered probe", err)
	}
	if took < 2*probeAfter || took > 5*time.Second {
		t.Fatalf("failed after %v, want about %v", took, 2*probeAfter)
	}
	if n := peer.received(ReqPing); n != 1 {
		t.Fatalf("peer received %d pings, want 1", n)
	}
}

// TestHeldCallOutlivesProbesOfLivePeer: a call a live server holds for
// many ProbeAfter periods is answered: the server answers the probes, and
// the connection stays the one it was.
func TestHeldCallOutlivesProbesOfLivePeer(t *testing.T) {
	ts, ln := startCountingServer(t, nil)
	const hold = 1500 * time.Millisecond
	ts.HandleFunc(ReqPullMessage, func(ctx context.Context, _ *Conn, req *Command) *Command {
		Park(ctx)
		select {
		case <-time.After(hold):
		case <-ctx.Done():
			return nil
		}
		return NewResponse(req, ResSuccess, "held")
	})
	cl := newProbingClient(t, 100*time.Millisecond)
	start := time.Now()
	resp, err := cl.Invoke(testCtx(t), ts.addr, NewRequest(ReqPullMessage, nil, nil))
	if err != nil || resp.Remark != "held" {
		t.Fatalf("held call: %v %v", resp, err)
	}
	if took := time.Since(start); took < hold {
		t.Fatalf("answered after %v, before the %v hold", took, hold)
	}
	if n := ln.n.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// TestSilentConnClosedAfterTimeout: a call that times out with nothing
// received since it was sent closes its connection, so the next call
// dials afresh instead of queueing behind a dead stream.
func TestSilentConnClosedAfterTimeout(t *testing.T) {
	peer := startFrozenPeer(t)
	// Long enough that no probe goes out during the calls.
	cl := newProbingClient(t, 400*time.Millisecond)
	for i := 1; i <= 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := cl.Invoke(ctx, peer.addr, NewRequest(ReqSendMessage, nil, nil))
		cancel()
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("call %d: %v, want ErrTimeout", i, err)
		}
	}
	if n := peer.accepts.Load(); n != 2 {
		t.Fatalf("%d connections for 2 timed-out calls, want 2 (each timeout closes its silent connection)", n)
	}
	if n := peer.received(ReqPing); n != 0 {
		t.Fatalf("%d probes sent, want none", n)
	}
}

// TestTimeoutOnLiveConnKeepsIt: a call that times out keeps its connection
// when something arrived on it meanwhile (another call's answer), or when
// it waited less than ProbeAfter/2.
func TestTimeoutOnLiveConnKeepsIt(t *testing.T) {
	ts, ln := startCountingServer(t, nil)
	arrived := make(chan struct{}, 2)
	ts.HandleFunc(ReqPullMessage, func(ctx context.Context, _ *Conn, _ *Command) *Command {
		Park(ctx)
		arrived <- struct{}{}
		<-ctx.Done()
		return nil
	})
	ts.HandleFunc(ReqSendMessage, echoHandler)
	cl := newProbingClient(t, 400*time.Millisecond)
	// Waited 100 ms of silence: under ProbeAfter/2.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqPullMessage, nil, nil))
	cancel()
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("short call: %v, want ErrTimeout", err)
	}
	recv(t, arrived, "the short call at the server")
	// Waited 300 ms, but an answer arrived meanwhile.
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	held := make(chan error, 1)
	go func() {
		_, err := cl.Invoke(ctx, ts.addr, NewRequest(ReqPullMessage, nil, nil))
		held <- err
	}()
	recv(t, arrived, "the held call at the server")
	if _, err := cl.Invoke(testCtx(t), ts.addr, NewRequest(ReqSendMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, held, "the held call's timeout"); !errors.Is(err, ErrTimeout) {
		t.Fatalf("held call: %v, want ErrTimeout", err)
	}
	if _, err := cl.Invoke(testCtx(t), ts.addr, NewRequest(ReqSendMessage, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if n := ln.n.Load(); n != 1 {
		t.Fatalf("%d connections, want 1: a timeout on a live connection closed it", n)
	}
}

// TestProbeAfterValidated: a negative ProbeAfter is refused.
func TestProbeAfterValidated(t *testing.T) {
	cfg := DefaultClientConfig()
	cfg.ProbeAfter = -time.Second
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "ProbeAfter") {
		t.Fatalf("Validate = %v, want a ProbeAfter error", err)
	}
}
