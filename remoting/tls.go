package remoting

// TLS: a Server with ServerConfig.TLS handshakes every accepted connection
// (bounded by HandshakeTimeout) before reading frames; a Client with
// ClientConfig.TLS handshakes after dialling. The frames inside are the
// same. A mismatch is named rather than left to the frame decoder: a
// plaintext server that receives a TLS ClientHello (record type 0x16,
// version major 0x03) logs "TLS handshake on a plaintext port" and closes,
// and a plaintext client whose connection is closed before any answer is
// told the port may expect TLS.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// DefaultHandshakeTimeout bounds a TLS handshake when the configuration
// leaves HandshakeTimeout zero.
const DefaultHandshakeTimeout = 10 * time.Second

// ErrTLSHandshake: a TLS handshake failed or timed out; the wrapped error
// says why.
var ErrTLSHandshake = errors.New("remoting: TLS handshake failed")

// The first bytes of a TLS record carrying a ClientHello: content type
// handshake, then the major version of every TLS and SSLv3 record.
const (
	tlsRecordHandshake = 0x16
	tlsVersionMajor    = 0x03
)

func handshakeTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultHandshakeTimeout
	}
	return d
}

// TLSState returns the connection's TLS state, and false on a plaintext
// connection.
func (c *Conn) TLSState() (tls.ConnectionState, bool) {
	if tc, ok := c.nc.(*tls.Conn); ok {
		return tc.ConnectionState(), true
	}
	return tls.ConnectionState{}, false
}

// handshake runs the server side of a TLS handshake on a freshly accepted
// connection, then serves it. It runs on its own goroutine, counted in
// s.wg, so a slow or truncated handshake delays nobody else; Shutdown
// closes connections still handshaking.
func (s *Server) handshake(nc net.Conn, ip string) {
	defer s.wg.Done()
	defer s.untrackHandshake(nc)
	tc := tls.Server(nc, s.cfg.TLS)
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout(s.cfg.HandshakeTimeout))
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		s.log.Warn("TLS handshake failed, closing connection", "remote", nc.RemoteAddr().String(), "error", handshakeCause(err, ctx))
		_ = nc.Close()
		s.opts.limits.releaseConn(ip)
		return
	}
	s.track(tc, ip)
}

// startHandshake registers nc as handshaking and starts its handshake,
// unless the server is draining.
func (s *Server) startHandshake(nc net.Conn, ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		_ = nc.Close()
		s.opts.limits.releaseConn(ip)
		return
	}
	if s.handshaking == nil {
		s.handshaking = make(map[net.Conn]struct{})
	}
	s.handshaking[nc] = struct{}{}
	s.wg.Add(1)
	go s.handshake(nc, ip)
}

func (s *Server) untrackHandshake(nc net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.handshaking, nc)
}

// closeHandshaking closes the connections still handshaking (Shutdown).
func (s *Server) closeHandshaking() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for nc := range s.handshaking {
		_ = nc.Close()
	}
}

// handshakeCause names a deadline as a timeout rather than the closed
// connection the cancelled handshake reports.
func handshakeCause(err error, ctx context.Context) error {
	if ctx.Err() != nil {
		return fmt.Errorf("timed out: %w", err)
	}
	return err
}

// clientHandshake runs the client side of a TLS handshake on a dialled
// connection to addr. Without a ServerName in cfg the host of addr is
// verified, as crypto/tls.Dial does.
func clientHandshake(ctx context.Context, nc net.Conn, addr string, cfg *tls.Config, timeout time.Duration) (*tls.Conn, error) {
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout(timeout))
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = nc.Close()
		err = handshakeCause(err, hctx)
		if isPeerClose(err) {
			return nil, fmt.Errorf("%w with %s: %w (the server closed the connection: is it a plaintext port?)", ErrTLSHandshake, addr, err)
		}
		return nil, fmt.Errorf("%w with %s: %w", ErrTLSHandshake, addr, err)
	}
	return tc, nil
}

// isPeerClose reports whether err is the peer ending the connection.
func isPeerClose(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// sawTLSHello peeks at the first bytes of a plaintext server connection
// and reports whether they begin a TLS handshake. A remoting frame starts
// with its length, whose top byte is 0 for any frame under 16 MiB and
// never 0x16 under the default limit.
func (c *Conn) sawTLSHello(br *bufio.Reader) bool {
	head, err := br.Peek(2)
	if err != nil || head[0] != tlsRecordHandshake || head[1] != tlsVersionMajor {
		return false
	}
	c.log.Warn("TLS handshake on a plaintext port, closing connection: the client uses TLS, this port does not")
	c.closeWith(errors.New("TLS handshake on a plaintext port"))
	return true
}

// errPlaintextToTLS explains a plaintext client's connection closed by
// the server before any answer.
var errPlaintextToTLS = errors.New("the server closed the connection before answering: if the port expects TLS, dial with TLS")

// firstReadHint adds errPlaintextToTLS to the error ending a plaintext
// client connection that never received a frame.
func (c *Conn) firstReadHint(err error) error {
	if !c.opts.plainClient || !isPeerClose(err) {
		return err
	}
	return fmt.Errorf("%w: %w", err, errPlaintextToTLS)
}
