package dledger

// Raft over TLS: a raft.StreamLayer whose listener handshakes every
// accepted connection (with Config.TLSServer, normally requiring a peer
// certificate) and whose dialer handshakes with Config.TLSClient before
// raft's NetworkTransport speaks its own protocol inside.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// peerHandshakeTimeout bounds a TLS handshake between peers, so a
// connection that stalls mid-handshake cannot hold a raft handler. A
// variable for tests.
var peerHandshakeTimeout = 10 * time.Second

var _ raft.StreamLayer = (*tlsStreamLayer)(nil)

// tlsStreamLayer is raft's TCP stream layer with TLS on both directions.
type tlsStreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	server    *tls.Config
	client    *tls.Config
	log       hclog.Logger
}

// newTLSStreamLayer listens on bind. advertise, if non-nil, is what the
// other peers dial; otherwise the bound address, which must be a concrete
// IP (as raft's TCP transport requires).
func newTLSStreamLayer(bind string, advertise net.Addr, server, client *tls.Config, log hclog.Logger) (*tlsStreamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	s := &tlsStreamLayer{ln: ln, advertise: advertise, server: server, client: client, log: log}
	addr, ok := s.Addr().(*net.TCPAddr)
	if !ok || addr.IP == nil || addr.IP.IsUnspecified() {
		_ = ln.Close()
		return nil, fmt.Errorf("raft address %v is not advertisable: set Advertise", s.Addr())
	}
	return s, nil
}

// Accept returns the next connection; its handshake runs on its first
// read or write, on the goroutine raft serves it from, bounded by
// peerHandshakeTimeout.
func (s *tlsStreamLayer) Accept() (net.Conn, error) {
	nc, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	return &handshakingConn{Conn: tls.Server(nc, s.server), log: s.log}, nil
}

// Close stops the listener.
func (s *tlsStreamLayer) Close() error { return s.ln.Close() }

// Addr is the advertised address, or the bound one.
func (s *tlsStreamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.ln.Addr()
}

// Dial connects to a peer and completes the handshake within timeout.
// Without a ServerName in the client config the peer's host (its raft
// address) is verified, so peer certificates name their raft hosts.
func (s *tlsStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := tls.DialWithDialer(peerDialer(timeout), "tcp", string(address), s.client)
	if err != nil {
		return nil, fmt.Errorf("dledger: TLS dial of peer %s: %w", address, err)
	}
	return c, nil
}

// handshakingConn is an accepted *tls.Conn whose first use handshakes
// with a deadline and logs a failure, which raft would report only as an
// undecodable command.
type handshakingConn struct {
	*tls.Conn
	log  hclog.Logger
	once sync.Once
	err  error
}

func (c *handshakingConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), peerHandshakeTimeout)
		defer cancel()
		if err := c.HandshakeContext(ctx); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("timed out: %w", err)
			}
			c.err = fmt.Errorf("dledger: TLS handshake with peer %s: %w", c.RemoteAddr(), err)
			if !errors.Is(err, net.ErrClosed) {
				c.log.Warn("raft TLS handshake failed", "remote", c.RemoteAddr().String(), "error", err)
			}
			_ = c.Close()
		}
	})
	return c.err
}

// Read handshakes first.
func (c *handshakingConn) Read(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

// Write handshakes first.
func (c *handshakingConn) Write(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}
