package dledger

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
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
	main, err := newTCPTransportForTest("127.0.0.1:0", log)
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

// TestVoteRequestSurvivesPeerRestart: a vote request to a peer that
// restarted since the last one finds a pooled connection to the old
// process and fails at once (EOF); it is sent again on a fresh connection
// and answered, instead of costing the candidate an election round.
func TestVoteRequestSurvivesPeerRestart(t *testing.T) {
	log := hclog.NewNullLogger()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	serve := func(tr *netTransport) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case rpc := <-tr.Consumer():
					rpc.Respond(&raft.RequestVoteResponse{Granted: true}, nil)
				case <-stop:
					return
				}
			}
		}()
	}
	closeT := func(tr *netTransport) { tr.Close() }
	b, err := newTCPTransportForTest("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	serve(b)
	addr := b.LocalAddr()
	a, err := newTCPTransportForTest("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(a)
	pt, _ := newProgressTransport(a, nil, func() bool { return false })
	vote := func() error {
		var resp raft.RequestVoteResponse
		if err := pt.RequestVote("b", addr, &raft.RequestVoteRequest{Term: 1}, &resp); err != nil {
			return err
		}
		if !resp.Granted {
			return errors.New("vote not granted")
		}
		return nil
	}
	if err := vote(); err != nil {
		t.Fatal(err)
	}
	// Restart b on the same address: a's pooled connection is now stale.
	closeT(b)
	var b2 *netTransport
	for start := time.Now(); b2 == nil; {
		if b2, err = newTCPTransportForTest(string(addr), log); err != nil {
			if time.Since(start) > 5*time.Second {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond) // the port is being released
		}
	}
	defer closeT(b2)
	serve(b2)
	if err := vote(); err != nil {
		t.Fatalf("vote request after the peer restarted: %v", err)
	}
}

// TestPeerDialSetsUserTimeout: a peer connection carries TCP_USER_TIMEOUT,
// so data left unacknowledged across a partition fails it within
// peerUserTimeout instead of waiting on TCP's retransmission backoff.
func TestPeerDialSetsUserTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := tcpDial(raft.ServerAddress(ln.Addr().String()), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	if err := rc.Control(func(fd uintptr) { got, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout) }); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	if want := int(peerUserTimeout.Milliseconds()); got != want {
		t.Fatalf("TCP_USER_TIMEOUT %d ms, want %d", got, want)
	}
}
