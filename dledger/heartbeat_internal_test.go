package dledger

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestHeartbeatToSilentPeerFailsFast: a heartbeat to a peer that takes
// the connection but never answers (its answers dropped by a partition)
// fails within the heartbeat deadline, not the transport's 10 s, so the
// next heartbeat goes out on a fresh connection as soon as the link is
// back. Through the main transport it took the full 10 s.
func TestHeartbeatToSilentPeerFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	log := hclog.NewNullLogger()
	main, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 3, 10*time.Second, log)
	if err != nil {
		t.Fatal(err)
	}
	defer main.Close()
	la, err := net.ResolveTCPAddr("tcp", string(main.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	hb := newHeartbeatTransport(la, tcpDial, 100*time.Millisecond, log)
	defer hb.Close()
	pt, _ := newProgressTransport(main, hb, func() bool { return false })

	start := time.Now()
	err = pt.AppendEntries("p", raft.ServerAddress(ln.Addr().String()), &raft.AppendEntriesRequest{Term: 1}, &raft.AppendEntriesResponse{})
	took := time.Since(start)
	if err == nil {
		t.Fatal("a heartbeat to a silent peer succeeded")
	}
	if took > 2*time.Second {
		t.Fatalf("a heartbeat to a silent peer failed only after %v (deadline %v)", took, heartbeatDeadline(100*time.Millisecond))
	}
	t.Logf("failed after %v: %v", took, err)
}
