package dledger

import (
	"errors"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// Peer connections fail fast. hashicorp/raft dials and reads under one
// 10 s deadline; across a partition a dial then waits out SYN
// retransmissions, and a connection whose packets were dropped waits out
// TCP's retransmission backoff (grown to seconds during the partition)
// before anything it carries arrives after the link heals. Dials here are
// bounded by maxPeerDial, and a connection whose sent data stays
// unacknowledged for peerUserTimeout fails (TCP_USER_TIMEOUT, Linux), so
// raft dials afresh and reaches the peer as soon as the link is back.
const (
	maxPeerDial     = time.Second
	peerUserTimeout = 2 * time.Second
)

// peerDialer dials a peer within min(timeout, maxPeerDial).
func peerDialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: min(timeout, maxPeerDial), Control: setUserTimeout}
}

// tcpDial dials a peer over plain TCP.
func tcpDial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return peerDialer(timeout).Dial("tcp", string(address))
}

// tcpStream is raft's plain TCP stream layer with peerDialer's dials.
type tcpStream struct {
	ln  net.Listener
	adv net.Addr
}

var errNotAdvertisable = errors.New("dledger: raft address is not advertisable (bind a specific address or set Advertise)")

// newTCPStream listens on bind; peers are told adv, or the bound address.
func newTCPStream(bind string, adv net.Addr) (*tcpStream, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	s := &tcpStream{ln: ln, adv: adv}
	if a, ok := s.Addr().(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		ln.Close()
		return nil, errNotAdvertisable
	}
	return s, nil
}

// Accept implements net.Listener.
func (s *tcpStream) Accept() (net.Conn, error) { return s.ln.Accept() }

// Close implements net.Listener.
func (s *tcpStream) Close() error { return s.ln.Close() }

// Addr implements net.Listener: the advertised address.
func (s *tcpStream) Addr() net.Addr {
	if s.adv != nil {
		return s.adv
	}
	return s.ln.Addr()
}

// Dial implements raft.StreamLayer.
func (s *tcpStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tcpDial(address, timeout)
}
