package dledger

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Heartbeats on their own connections, with a short deadline.
//
// hashicorp/raft sends a follower's heartbeats from one goroutine, through
// the transport's pooled connections, under the transport's 10 s RPC
// deadline. When a partition drops a heartbeat's packets (a one-way or
// flapping link), that call waits on TCP's retransmissions, whose backoff
// has grown during the partition, and no other heartbeat goes out: after
// the link heals the follower hears nothing for seconds, keeps asking for
// pre-votes the others refuse, and if the other follower fails meanwhile
// the group stops writing (container runs: 3.0 and 3.2 s). Here heartbeats
// use a transport of their own that only dials, with a deadline of twice
// the heartbeat timeout: a heartbeat lost to a partition fails fast, its
// connection is dropped, and the next one dials afresh, which reaches the
// follower as soon as the link is back. They also never queue behind a
// large AppendEntries.

// heartbeatDeadline is the I/O deadline of one heartbeat for raft's
// heartbeat timeout hb.
func heartbeatDeadline(hb time.Duration) time.Duration { return 2 * hb }

// dialStream is a raft.StreamLayer that only dials: the heartbeat
// transport's answers come back on the connections it dialed, and peers
// connect to the node's main transport.
type dialStream struct {
	addr   net.Addr
	dial   func(address raft.ServerAddress, timeout time.Duration) (net.Conn, error)
	closed chan struct{}
	once   sync.Once
}

var errDialOnly = errors.New("dledger: heartbeat transport accepts no connections")

// Accept implements net.Listener: it blocks until Close.
func (s *dialStream) Accept() (net.Conn, error) {
	<-s.closed
	return nil, errDialOnly
}

// Close implements net.Listener.
func (s *dialStream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// Addr implements net.Listener: the main transport's address.
func (s *dialStream) Addr() net.Addr { return s.addr }

// Dial implements raft.StreamLayer.
func (s *dialStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.dial(address, timeout)
}

// newHeartbeatTransport returns the transport heartbeats go through, for a
// node whose main transport listens at addr and dials with dial.
func newHeartbeatTransport(addr net.Addr, dial func(raft.ServerAddress, time.Duration) (net.Conn, error), hb time.Duration, log hclog.Logger) *netTransport {
	s := &dialStream{addr: addr, dial: dial, closed: make(chan struct{})}
	return newNetTransport(s, 1, heartbeatDeadline(hb), log.Named("heartbeat"))
}
