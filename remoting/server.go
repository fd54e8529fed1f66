package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ServerConfig configures a Server. Start from DefaultServerConfig.
type ServerConfig struct {
	// MaxFrameSize bounds an incoming frame's length; a peer that sends a
	// bigger one is disconnected. Default DefaultMaxFrameSize.
	MaxFrameSize int
	// MaxConcurrentPerConn bounds the handlers running for one connection.
	// At the limit the connection is not read (the peer feels TCP
	// back-pressure) until one ends; a request that finds no place within
	// BusyWait is answered SYSTEM_BUSY. Handlers parked with Park (held
	// long polls, one per queue) do not count. Default 1024.
	MaxConcurrentPerConn int
	// BusyWait bounds a request's wait for a place among its connection's
	// running handlers. Default 3 s.
	BusyWait time.Duration
	// WriteTimeout bounds writing one frame; a peer that stops reading is
	// disconnected. Default 10 s.
	WriteTimeout time.Duration
	// Limits bounds connections per IP and in total, each connection's
	// request rate, header size and idle time. Default DefaultLimits().
	Limits Limits
	// TLS, if set, makes every connection TLS: accepted connections
	// handshake before their first frame (see tls.go). Nil serves
	// plaintext, and a TLS ClientHello is refused with a log line.
	TLS *tls.Config
	// HandshakeTimeout bounds a TLS handshake; a client that stalls is
	// disconnected. Zero means DefaultHandshakeTimeout (10 s).
	HandshakeTimeout time.Duration
	// Logger receives the server's logs, under the name "remoting". Nil
	// discards them.
	Logger hclog.Logger
}

// DefaultServerConfig returns the defaults documented on ServerConfig.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		MaxFrameSize:         DefaultMaxFrameSize,
		MaxConcurrentPerConn: 1024,
		BusyWait:             3 * time.Second,
		WriteTimeout:         10 * time.Second,
		Limits:               DefaultLimits(),
		Logger:               hclog.Default(),
	}
}

// minFrameSize is the smallest sensible frame limit: a JSON header with a
// few ext fields must fit.
const minFrameSize = 1 << 10

// Validate reports every problem with the configuration at once.
func (c ServerConfig) Validate() error {
	var errs []error
	errs = append(errs, validateFrameSize(c.MaxFrameSize))
	if c.MaxConcurrentPerConn < 1 {
		errs = append(errs, fmt.Errorf("remoting: MaxConcurrentPerConn %d must be at least 1", c.MaxConcurrentPerConn))
	}
	if c.BusyWait < 0 {
		errs = append(errs, fmt.Errorf("remoting: BusyWait %v is negative", c.BusyWait))
	}
	if c.WriteTimeout <= 0 {
		errs = append(errs, fmt.Errorf("remoting: WriteTimeout %v must be positive", c.WriteTimeout))
	}
	errs = append(errs, c.Limits.validate()...)
	if c.HandshakeTimeout < 0 {
		errs = append(errs, fmt.Errorf("remoting: HandshakeTimeout %v is negative", c.HandshakeTimeout))
	}
	return errors.Join(errs...)
}

func validateFrameSize(n int) error {
	if n < minFrameSize || n > math.MaxInt32 {
		return fmt.Errorf("remoting: MaxFrameSize %d outside [%d, %d]", n, minFrameSize, math.MaxInt32)
	}
	return nil
}

func loggerOrNull(l hclog.Logger) hclog.Logger {
	if l == nil {
		return hclog.NewNullLogger()
	}
	return l.Named("remoting")
}

// Server accepts remoting connections and dispatches their requests to
// handlers registered by request code.
type Server struct {
	cfg  ServerConfig
	log  hclog.Logger
	mux  mux
	opts connOptions

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	// handshaking holds TLS connections not yet handshaken (tls.go).
	handshaking map[net.Conn]struct{}
	conns       map[*Conn]struct{}
	onClose     []func(*Conn)
	addr        net.Addr
	draining    bool
	active      int           // handlers running, for Shutdown
	idle        chan struct{} // closed once draining and active == 0
	idleShut    bool
	wg          sync.WaitGroup // Serve loops and connection goroutines
}

// NewServer returns a server with no handlers; unknown codes are answered
// REQUEST_CODE_NOT_SUPPORTED.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:       cfg,
		log:       loggerOrNull(cfg.Logger),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*Conn]struct{}),
		idle:      make(chan struct{}),
	}
	s.opts = connOptions{
		maxFrame:      cfg.MaxFrameSize,
		writeTimeout:  cfg.WriteTimeout,
		maxConcurrent: cfg.MaxConcurrentPerConn,
		busyWait:      cfg.BusyWait,
		logger:        s.log,
		mux:           &s.mux,
		group:         &s.wg,
		admit:         s.admit,
		release:       s.release,
		onClose:       s.connClosed,
		limits:        newLimiter(cfg.Limits, s.log),
		detectTLS:     cfg.TLS == nil && cfg.MaxFrameSize < tlsRecordHandshake<<24,
	}
	return s, nil
}

// Handle registers h for requests with the given code, replacing any
// earlier handler. It may be called while the server runs.
func (s *Server) Handle(code int16, h Handler) { s.mux.handle(code, h) }

// HandleFunc registers f for requests with the given code.
func (s *Server) HandleFunc(code int16, f func(ctx context.Context, c *Conn, req *Command) *Command) {
	s.mux.handle(code, HandlerFunc(f))
}

// OnConnClose registers f to run after a connection closed, for dropping
// per-connection state (registered clients, queue locks). f runs on the
// goroutine that closed the connection and must not block.
func (s *Server) OnConnClose(f func(*Conn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onClose = append(s.onClose, f)
}

// Addr returns the address of the first listener Serve was given, or nil.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// ListenAndServe listens on TCP addr and serves it; see Serve.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("remoting: listen %s: %w", addr, err)
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln until Shutdown or Close, then returns
// ErrServerClosed. It closes ln. It returns other errors if accepting fails
// for good.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	if s.addr == nil {
		s.addr = ln.Addr()
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		_ = ln.Close()
	}()
	s.log.Info("serving", "addr", ln.Addr().String())
	return s.acceptLoop(ln)
}

func (s *Server) acceptLoop(ln net.Listener) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isDraining() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed, retrying", "error", err, "backoff", backoff)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("remoting: accept: %w", err)
		}
		backoff = 0
		// Connection limits come before a TLS handshake, so connections
		// still handshaking count and an abusive address costs no
		// handshake CPU.
		ip := remoteIP(nc.RemoteAddr())
		if err := s.opts.limits.admitConn(ip); err != nil {
			if s.cfg.TLS != nil {
				s.opts.limits.refuseConnClosing(nc, err) // a plaintext frame would only garble a TLS handshake
			} else {
				s.opts.limits.refuseConn(nc, err, &s.wg)
			}
			continue
		}
		if s.cfg.TLS != nil {
			s.startHandshake(nc, ip)
			continue
		}
		s.track(nc, ip)
	}
}

// track serves an admitted connection (its place under the limits taken
// for ip).
func (s *Server) track(nc net.Conn, ip string) {
	c := newConn(nc, &s.opts)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		s.opts.limits.releaseConn(ip)
		_ = nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	c.log.Debug("connection accepted")
	c.start()
}

func (s *Server) isDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

func (s *Server) connClosed(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	hooks := s.onClose
	s.mu.Unlock()
	s.opts.limits.releaseConn(remoteIP(c.RemoteAddr()))
	for _, f := range hooks {
		f(c)
	}
}

// admit counts a starting handler, refusing once Shutdown began so the
// count only falls while draining.
func (s *Server) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return false
	}
	s.active++
	return true
}

func (s *Server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	s.signalIdleLocked()
}

func (s *Server) signalIdleLocked() {
	if s.draining && s.active == 0 && !s.idleShut {
		s.idleShut = true
		close(s.idle)
	}
}

// Shutdown stops accepting, answers new requests SERVICE_NOT_AVAILABLE
// (which clients retry elsewhere), waits until running handlers finish or
// ctx is done, then closes every connection and waits for the server's
// goroutines to end. Handlers must return once their context is cancelled.
// It returns ctx's error if handlers were cut short.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	s.signalIdleLocked()
	lns := make([]net.Listener, 0, len(s.listeners))
	for ln := range s.listeners {
		lns = append(lns, ln)
	}
	s.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
	s.closeHandshaking()

	var err error
	select {
	case <-s.idle:
	case <-ctx.Done():
		err = fmt.Errorf("remoting: shutdown: %w", ctx.Err())
	}
	s.closeConns()
	s.wg.Wait()
	return err
}

// Close shuts down without waiting for running handlers: their context is
// cancelled and their connections closed at once.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Shutdown(ctx)
	return nil
}

func (s *Server) closeConns() {
	s.mu.Lock()
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	s.opts.limits.closeLingering()
}
