package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ClientConfig configures a Client. Start from DefaultClientConfig.
type ClientConfig struct {
	// DialTimeout bounds connecting to an address. Default 3 s.
	DialTimeout time.Duration
	// MaxFrameSize bounds an incoming frame's length. Default
	// DefaultMaxFrameSize.
	MaxFrameSize int
	// WriteTimeout bounds writing one frame. Default 10 s.
	WriteTimeout time.Duration
	// MaxConcurrentPerConn bounds the handlers running for server-initiated
	// requests on one connection. Default 64.
	MaxConcurrentPerConn int
	// TLS, if set, makes every connection TLS: dialled connections
	// handshake before their first frame, verifying the server as the
	// config says (an empty ServerName means the host of the address).
	// Nil dials plaintext.
	TLS *tls.Config
	// HandshakeTimeout bounds a TLS handshake, within the call's own
	// deadline. Zero means DefaultHandshakeTimeout (10 s).
	HandshakeTimeout time.Duration
	// ProbeAfter turns on liveness probes (liveness.go): a call that
	// waited this long on a connection that received nothing for as long
	// makes it send a RAFTMQ_PING, and the connection is closed (its calls
	// fail with ErrConnClosed) if nothing arrives within ProbeAfter more;
	// a call that times out after waiting at least ProbeAfter/2 with
	// nothing received since it was sent closes its connection too.
	// Default 1 s; zero turns both off.
	ProbeAfter time.Duration
	// Logger receives the client's logs, under the name "remoting". Nil
	// discards them.
	Logger hclog.Logger
}

// DefaultClientConfig returns the defaults documented on ClientConfig.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{
		DialTimeout:          3 * time.Second,
		MaxFrameSize:         DefaultMaxFrameSize,
		WriteTimeout:         10 * time.Second,
		MaxConcurrentPerConn: 64,
		ProbeAfter:           time.Second,
		Logger:               hclog.Default(),
	}
}

// Validate reports every problem with the configuration at once.
func (c ClientConfig) Validate() error {
	var errs []error
	if c.DialTimeout <= 0 {
		errs = append(errs, fmt.Errorf("remoting: DialTimeout %v must be positive", c.DialTimeout))
	}
	errs = append(errs, validateFrameSize(c.MaxFrameSize))
	if c.WriteTimeout <= 0 {
		errs = append(errs, fmt.Errorf("remoting: WriteTimeout %v must be positive", c.WriteTimeout))
	}
	if c.MaxConcurrentPerConn < 1 {
		errs = append(errs, fmt.Errorf("remoting: MaxConcurrentPerConn %d must be at least 1", c.MaxConcurrentPerConn))
	}
	if c.ProbeAfter < 0 {
		errs = append(errs, fmt.Errorf("remoting: ProbeAfter %v is negative", c.ProbeAfter))
	}
	if c.HandshakeTimeout < 0 {
		errs = append(errs, fmt.Errorf("remoting: HandshakeTimeout %v is negative", c.HandshakeTimeout))
	}
	return errors.Join(errs...)
}

// Client sends requests to remoting servers over one connection per
// address, dialled on first use and again after the connection breaks.
// It also serves requests servers send back over those connections
// (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED).
type Client struct {
	cfg  ClientConfig
	log  hclog.Logger
	mux  mux
	opts connOptions

	mu     sync.Mutex
	closed bool
	slots  map[string]*connSlot
	wg     sync.WaitGroup // connection goroutines
	cbwg   sync.WaitGroup // InvokeAsync goroutines
}

// connSlot serialises dialling one address, so concurrent first calls
// share one connection.
type connSlot struct {
	mu   sync.Mutex
	conn *Conn
}

// NewClient returns a client with no connections.
func NewClient(cfg ClientConfig) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cl := &Client{cfg: cfg, log: loggerOrNull(cfg.Logger), slots: make(map[string]*connSlot)}
	cl.opts = connOptions{
		maxFrame:      cfg.MaxFrameSize,
		writeTimeout:  cfg.WriteTimeout,
		maxConcurrent: cfg.MaxConcurrentPerConn,
		logger:        cl.log,
		mux:           &cl.mux,
		group:         &cl.wg,
		plainClient:   cfg.TLS == nil,
		probeAfter:    cfg.ProbeAfter,
	}
	return cl, nil
}

// Handle registers h for requests servers send with the given code.
// Unregistered codes are answered REQUEST_CODE_NOT_SUPPORTED.
func (cl *Client) Handle(code int16, h Handler) { cl.mux.handle(code, h) }

// HandleFunc registers f for requests servers send with the given code.
func (cl *Client) HandleFunc(code int16, f func(ctx context.Context, c *Conn, req *Command) *Command) {
	cl.mux.handle(code, HandlerFunc(f))
}

// Invoke sends cmd to addr and waits for the response, until ctx is done
// or, without a deadline, for DefaultInvokeTimeout (dialling included). A
// failure response is returned as a response; use AsError. cmd is not
// modified.
func (cl *Client) Invoke(ctx context.Context, addr string, cmd *Command) (*Command, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	c, err := cl.conn(ctx, addr)
	if err != nil {
		return nil, err
	}
	return c.Invoke(ctx, cmd)
}

// InvokeAsync is Invoke without waiting: cb runs exactly once, on its own
// goroutine, with the response or the error. Close waits for callbacks.
func (cl *Client) InvokeAsync(ctx context.Context, addr string, cmd *Command, cb func(*Command, error)) {
	run := func() { cb(cl.Invoke(ctx, addr, cmd)) }
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		cb(nil, ErrClientClosed)
		return
	}
	cl.cbwg.Add(1)
	cl.mu.Unlock()
	go func() {
		defer cl.cbwg.Done()
		run()
	}()
}

// InvokeOneway sends cmd to addr with the oneway bit set and returns once
// it is written.
func (cl *Client) InvokeOneway(ctx context.Context, addr string, cmd *Command) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	c, err := cl.conn(ctx, addr)
	if err != nil {
		return err
	}
	return c.SendOneway(ctx, cmd)
}

// conn returns the live connection to addr, dialling if there is none.
func (cl *Client) conn(ctx context.Context, addr string) (*Conn, error) {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil, ErrClientClosed
	}
	slot := cl.slots[addr]
	if slot == nil {
		slot = &connSlot{}
		cl.slots[addr] = slot
	}
	cl.mu.Unlock()

	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.conn != nil && !slot.conn.isClosed() {
		return slot.conn, nil
	}
	d := net.Dialer{Timeout: cl.cfg.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("remoting: dial %s: %w", addr, err)
	}
	if cl.cfg.TLS != nil {
		tc, err := clientHandshake(ctx, nc, addr, cl.cfg.TLS, cl.cfg.HandshakeTimeout)
		if err != nil {
			cl.log.Warn("TLS handshake failed", "addr", addr, "error", err)
			return nil, err
		}
		nc = tc
	}
	c := newConn(nc, &cl.opts)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		_ = nc.Close()
		return nil, ErrClientClosed
	}
	c.start()
	slot.conn = c
	c.log.Debug("connected")
	return c, nil
}

// CloseConn closes the connection to addr, if any, failing its pending
// calls; the next call dials again.
func (cl *Client) CloseConn(addr string) {
	cl.mu.Lock()
	slot := cl.slots[addr]
	cl.mu.Unlock()
	if slot == nil {
		return
	}
	slot.mu.Lock()
	c := slot.conn
	slot.conn = nil
	slot.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// Close closes every connection, failing pending calls with ErrConnClosed,
// and waits for the client's goroutines and callbacks to end. Later calls
// fail with ErrClientClosed.
func (cl *Client) Close() error {
	cl.mu.Lock()
	cl.closed = true
	addrs := make([]string, 0, len(cl.slots))
	for addr := range cl.slots {
		addrs = append(addrs, addr)
	}
	cl.mu.Unlock()
	for _, addr := range addrs {
		cl.CloseConn(addr)
	}
	cl.wg.Wait()
	cl.cbwg.Wait()
	return nil
}
