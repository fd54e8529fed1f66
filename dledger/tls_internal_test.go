package dledger

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/tlsconf"
)

// A peer connection that stops mid-handshake is cut after
// peerHandshakeTimeout, with an error that says so.
func TestTLSStreamLayerTruncatedHandshakeTimesOut(t *testing.T) {
	old := peerHandshakeTimeout
	peerHandshakeTimeout = 200 * time.Millisecond
	defer func() { peerHandshakeTimeout = old }()
	g, err := tlsconf.Generate(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv, cl, err := tlsconf.Peer(g.ServerCert, g.ServerKey, g.CA, nil)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := newTLSStreamLayer("127.0.0.1:0", nil, srv, cl, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	raw, err := net.Dial("tcp", sl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00}); err != nil {
		t.Fatal(err)
	}
	c, err := sl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		errc <- err
	}()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("read of a stalled handshake: %v, want a timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled handshake held the connection")
	}
	// A real peer still gets through.
	go func() {
		c, err := sl.Accept()
		if err == nil {
			_, _ = c.Write([]byte("ok"))
			_ = c.Close()
		}
	}()
	pc, err := sl.Dial(raft.ServerAddress(sl.Addr().String()), time.Second)
	if err != nil {
		t.Fatalf("dial a TLS peer: %v", err)
	}
	defer pc.Close()
	buf := make([]byte, 2)
	if _, err := pc.Read(buf); err != nil || string(buf) != "ok" {
		t.Fatalf("read from peer: %q %v", buf, err)
	}
}
