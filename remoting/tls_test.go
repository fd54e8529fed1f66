package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/internal/tlsconf"
)

const codeEcho int16 = 9001

type testTLS struct {
	files  tlsconf.Generated
	server *tls.Config // mutual TLS unless built by tlsFiles(t, false)
	client *tls.Config // with the client certificate
	noCert *tls.Config // verifies the server, presents nothing
}

func tlsFiles(t *testing.T, clientAuth bool) testTLS {
	t.Helper()
	g, err := tlsconf.Generate(t.TempDir(), []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tlsconf.ServerConfig{CertFile: g.ServerCert, KeyFile: g.ServerKey, CAFile: g.CA, ClientAuth: clientAuth}.Server()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := tlsconf.ClientConfig{CAFile: g.CA, CertFile: g.ClientCert, KeyFile: g.ClientKey}.Client()
	if err != nil {
		t.Fatal(err)
	}
	noCert, err := tlsconf.ClientConfig{CAFile: g.CA}.Client()
	if err != nil {
		t.Fatal(err)
	}
	return testTLS{files: g, server: srv, client: cl, noCert: noCert}
}

func newTLSClient(t *testing.T, cfg *tls.Config) *Client {
	t.Helper()
	logger, _ := newTestLogger(t)
	ccfg := DefaultClientConfig()
	ccfg.Logger = logger
	ccfg.TLS = cfg
	ccfg.HandshakeTimeout = 2 * time.Second
	cl, err := NewClient(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func echo(t *testing.T, cl *Client, addr string) (*Command, error) {
	t.Helper()
	return cl.Invoke(testCtx(t), addr, NewRequest(codeEcho, map[string]string{"k": "v"}, []byte("hello")))
}

func wantEcho(t *testing.T, cl *Client, addr string) {
	t.Helper()
	resp, err := echo(t, cl, addr)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	if string(resp.Body) != "hello" || resp.ExtFields["k"] != "v" {
		t.Fatalf("echo answered %q %v", resp.Body, resp.ExtFields)
	}
}

func TestTLSRoundTrip(t *testing.T) {
	tt := tlsFiles(t, true)
	var state tls.ConnectionState
	seen := make(chan bool, 1)
	ts := startServer(t, func(c *ServerConfig) { c.TLS = tt.server })
	ts.HandleFunc(codeEcho, func(ctx context.Context, c *Conn, req *Command) *Command {
		var ok bool
		state, ok = c.TLSState()
		seen <- ok
		return echoHandler(ctx, c, req)
	})
	wantEcho(t, newTLSClient(t, tt.client), ts.addr)
	if !recv(t, seen, "handler") || len(state.PeerCertificates) == 0 || state.PeerCertificates[0].Subject.CommonName != "raftmq client" {
		t.Fatalf("server did not see the client certificate: %+v", state.PeerCertificates)
	}
}

func TestMutualTLSRefusesClientWithoutCertificate(t *testing.T) {
	tt := tlsFiles(t, true)
	ts := startServer(t, func(c *ServerConfig) { c.TLS = tt.server })
	ts.HandleFunc(codeEcho, echoHandler)
	_, err := echo(t, newTLSClient(t, tt.noCert), ts.addr)
	if err == nil {
		t.Fatal("a client without a certificate was served")
	}
	// TLS 1.3 clients finish their side before the server checks the
	// certificate, so the refusal arrives as the server's alert on the
	// first read, as the handshake error, or — when the server closed
	// before the client read the alert — as a closed connection; the
	// server's log line says why in every case.
	if !strings.Contains(err.Error(), "certificate") && !errors.Is(err, ErrTLSHandshake) && !errors.Is(err, ErrConnClosed) {
		t.Fatalf("refusal: %v, want the alert, a handshake error or a closed connection", err)
	}
	waitFor(t, "server log", func() bool {
		return strings.Contains(ts.logs.String(), "TLS handshake failed") && strings.Contains(ts.logs.String(), "certificate")
	})
	wantEcho(t, newTLSClient(t, tt.client), ts.addr)
}

func TestPlaintextClientOnTLSPort(t *testing.T) {
	tt := tlsFiles(t, false)
	ts := startServer(t, func(c *ServerConfig) { c.TLS = tt.server })
	ts.HandleFunc(codeEcho, echoHandler)
	_, err := echo(t, newTestClient(t), ts.addr)
	if !errors.Is(err, ErrConnClosed) || !strings.Contains(err.Error(), "dial with TLS") {
		t.Fatalf("plaintext client on a TLS port: %v, want a closed connection naming TLS", err)
	}
	waitFor(t, "server log", func() bool {
		return strings.Contains(ts.logs.String(), "TLS handshake failed") && strings.Contains(ts.logs.String(), "does not look like a TLS handshake")
	})
	wantEcho(t, newTLSClient(t, tt.noCert), ts.addr)
}

func TestTLSClientOnPlaintextPort(t *testing.T) {
	tt := tlsFiles(t, false)
	ts := startServer(t, nil)
	ts.HandleFunc(codeEcho, echoHandler)
	_, err := echo(t, newTLSClient(t, tt.noCert), ts.addr)
	if !errors.Is(err, ErrTLSHandshake) || !strings.Contains(err.Error(), "plaintext port") {
		t.Fatalf("TLS client on a plaintext port: %v, want a handshake error naming a plaintext port", err)
	}
	waitFor(t, "server log", func() bool { return strings.Contains(ts.logs.String(), "TLS handshake on a plaintext port") })
	if strings.Contains(ts.logs.String(), "frame too large") {
		t.Fatal("the ClientHello was decoded as a frame")
	}
	wantEcho(t, newTestClient(t), ts.addr)
}

func TestTruncatedTLSHandshakeTimesOut(t *testing.T) {
	tt := tlsFiles(t, false)
	ts := startServer(t, func(c *ServerConfig) {
		c.TLS = tt.server
		c.HandshakeTimeout = 200 * time.Millisecond
	})
	ts.HandleFunc(codeEcho, echoHandler)
	// The first bytes of a ClientHello record, then nothing.
	nc := dialRaw(t, ts.addr)
	if _, err := nc.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("server did not close the stalled handshake: %v", err)
	}
	waitFor(t, "timeout log", func() bool { return strings.Contains(ts.logs.String(), "timed out") })
	wantEcho(t, newTLSClient(t, tt.noCert), ts.addr)

	// A client whose server never answers the handshake gives up too.
	raw := startRawListener(t)
	ccfg := DefaultClientConfig()
	ccfg.TLS, ccfg.HandshakeTimeout = tt.noCert, 200*time.Millisecond
	cl, err := NewClient(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := echo(t, cl, raw); !errors.Is(err, ErrTLSHandshake) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("handshake with a silent server: %v", err)
	}
}

func TestShutdownClosesHandshakingConnections(t *testing.T) {
	tt := tlsFiles(t, false)
	ts := startServer(t, func(c *ServerConfig) { c.TLS = tt.server })
	nc := dialRaw(t, ts.addr)
	waitFor(t, "handshake tracked", func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return len(ts.handshaking) == 1
	})
	ts.stop(t)
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("handshaking connection not closed on shutdown: %v", err)
	}
}

// startRawListener accepts connections and never writes to them, until
// the test ends.
func startRawListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return ln.Addr().String()
}
