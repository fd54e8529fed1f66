package remoting

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Limits bounds what one peer can take from a Server. In every field zero
// means no limit. The defaults never bother a well-behaved client: the
// official clients and our SDK keep one connection per process and address
// and heartbeat every 30 s.
type Limits struct {
	// MaxConnsPerIP bounds the connections open at once from one remote IP
	// address. A connection over it is answered one SYSTEM_BUSY frame
	// (opaque 0) whose remark names the limit, then closed. Default 1000.
	MaxConnsPerIP int
	// MaxConns bounds all connections open at once, refused the same way.
	// Default 10000.
	MaxConns int
	// MaxRequestRate is each connection's sustained request rate in
	// requests per second, a token bucket of MaxRequestBurst. A request
	// over it is answered SYSTEM_BUSY (a oneway one is dropped). Responses
	// to the server's own calls are not counted. Default 0: no limit.
	MaxRequestRate float64
	// MaxRequestBurst is how many requests a connection may send at once
	// above MaxRequestRate. 0 means one second's worth of MaxRequestRate.
	MaxRequestBurst int
	// MaxRateRefusals: a connection refused for its rate more than this many
	// times within RateRefusalWindow is disconnected; a client that ignores
	// SYSTEM_BUSY gains nothing by flooding. 0: never disconnected for
	// rate. Default 1000.
	MaxRateRefusals int
	// RateRefusalWindow is the window MaxRateRefusals counts in. Default 10 s.
	RateRefusalWindow time.Duration
	// MaxHeaderSize bounds an incoming frame's header length (a send's
	// header carries its properties, at most 32 KiB before JSON escaping).
	// A peer that sends a bigger one is disconnected before the header is
	// parsed. 0: only MaxFrameSize bounds it. Default 1 MiB.
	MaxHeaderSize int
	// IdleTimeout closes a connection on which no frame arrived for this
	// long while none of its requests was being handled; a held long poll
	// keeps its connection open. RocketMQ closes idle channels after 120 s
	// too. Default 120 s.
	IdleTimeout time.Duration
}

// DefaultLimits returns the defaults documented on Limits.
func DefaultLimits() Limits {
	return Limits{
		MaxConnsPerIP:     1000,
		MaxConns:          10000,
		MaxRateRefusals:   1000,
		RateRefusalWindow: 10 * time.Second,
		MaxHeaderSize:     1 << 20,
		IdleTimeout:       120 * time.Second,
	}
}

// minHeaderLimit is the smallest header limit accepted: a JSON header with
// a few ext fields must fit.
const minHeaderLimit = 1 << 10

func (l Limits) validate() []error {
	var errs []error
	nonNegative := func(name string, v int) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("remoting: Limits.%s %d is negative", name, v))
		}
	}
	nonNegative("MaxConnsPerIP", l.MaxConnsPerIP)
	nonNegative("MaxConns", l.MaxConns)
	nonNegative("MaxRequestBurst", l.MaxRequestBurst)
	nonNegative("MaxRateRefusals", l.MaxRateRefusals)
	if l.MaxRequestRate < 0 || math.IsNaN(l.MaxRequestRate) || math.IsInf(l.MaxRequestRate, 0) {
		errs = append(errs, fmt.Errorf("remoting: Limits.MaxRequestRate %v must be a finite number, at least 0", l.MaxRequestRate))
	}
	if l.MaxRequestRate > 0 && l.MaxRateRefusals > 0 && l.RateRefusalWindow <= 0 {
		errs = append(errs, fmt.Errorf("remoting: Limits.RateRefusalWindow %v must be positive when MaxRateRefusals is set", l.RateRefusalWindow))
	}
	if l.MaxHeaderSize != 0 && (l.MaxHeaderSize < minHeaderLimit || l.MaxHeaderSize > maxHeaderLen) {
		errs = append(errs, fmt.Errorf("remoting: Limits.MaxHeaderSize %d outside [%d, %d] (0: no limit)", l.MaxHeaderSize, minHeaderLimit, maxHeaderLen))
	}
	if l.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("remoting: Limits.IdleTimeout %v is negative", l.IdleTimeout))
	}
	return errs
}

// burst is the token bucket's size.
func (l Limits) burst() float64 {
	if l.MaxRequestBurst > 0 {
		return float64(l.MaxRequestBurst)
	}
	return max(1, math.Ceil(l.MaxRequestRate))
}

// LimitStats counts what a Server's Limits refused since it was created.
type LimitStats struct {
	// RefusedConns: connections closed on accept, over MaxConns or
	// MaxConnsPerIP.
	RefusedConns uint64
	// RateLimited: requests answered SYSTEM_BUSY (or dropped, if oneway)
	// for MaxRequestRate.
	RateLimited uint64
	// RateDisconnects: connections closed for exceeding MaxRateRefusals.
	RateDisconnects uint64
	// HeaderRefused: connections closed for a header over MaxHeaderSize.
	HeaderRefused uint64
	// IdleClosed: connections closed after IdleTimeout.
	IdleClosed uint64
}

// LimitStats returns the server's refusal counters.
func (s *Server) LimitStats() LimitStats {
	l := s.opts.limits
	return LimitStats{
		RefusedConns:    l.refusedConns.Load(),
		RateLimited:     l.rateLimited.Load(),
		RateDisconnects: l.rateDisconnects.Load(),
		HeaderRefused:   l.headerRefused.Load(),
		IdleClosed:      l.idleClosed.Load(),
	}
}

// errIdle is the close cause of a connection that stayed silent for
// IdleTimeout; errRateLimited of one that kept exceeding its rate.
var (
	errIdle        = errors.New("idle timeout")
	errRateLimited = errors.New("request rate limit exceeded")
)

// refuseLinger bounds how long a refused connection is kept to deliver its
// SYSTEM_BUSY frame; maxLingering bounds how many are kept at once (beyond
// it they are closed without a word, which is all a flood deserves).
const (
	refuseLinger = time.Second
	maxLingering = 64
)

// throttleInterval is how often a throttled log line may repeat.
const throttleInterval = 10 * time.Second

// limiter is a Server's share of Limits: connection counts by IP, the
// refusal counters, and the throttles of the lines logged for refusals.
// Connections reach it through connOptions.limits (nil on a Client).
type limiter struct {
	cfg        Limits
	log        hclog.Logger
	burst      float64
	rateRemark string

	mu        sync.Mutex
	total     int
	perIP     map[string]int
	lingering map[net.Conn]struct{}

	refusedConns, rateLimited, rateDisconnects, headerRefused, idleClosed atomic.Uint64

	connLog, rateLog, dropLog logThrottle
}

func newLimiter(cfg Limits, log hclog.Logger) *limiter {
	l := &limiter{
		cfg:       cfg,
		log:       log,
		burst:     cfg.burst(),
		perIP:     make(map[string]int),
		lingering: make(map[net.Conn]struct{}),
	}
	l.rateRemark = fmt.Sprintf("request rate over this connection's limit of %g/s (burst %g)", cfg.MaxRequestRate, l.burst)
	return l
}

// remoteIP is the address connections are counted by: the IP without port.
func remoteIP(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// admitConn counts a new connection from ip, or says which limit it is
// over. Every admitted connection is released exactly once.
func (l *limiter) admitConn(ip string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.MaxConns > 0 && l.total >= l.cfg.MaxConns {
		return fmt.Errorf("too many connections (limit %d)", l.cfg.MaxConns)
	}
	if l.cfg.MaxConnsPerIP > 0 && l.perIP[ip] >= l.cfg.MaxConnsPerIP {
		return fmt.Errorf("too many connections from %s (limit %d)", ip, l.cfg.MaxConnsPerIP)
	}
	l.total++
	l.perIP[ip]++
	return nil
}

func (l *limiter) releaseConn(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
}

// refuseConn tells a connection over a connection limit why with one
// SYSTEM_BUSY frame, then closes it. The frame is written only on plain
// TCP (over TLS it would cost the handshake the limit is there to spare)
// and only while few refusals linger: the write side is shut first and the
// peer's bytes drained for up to refuseLinger, because closing a socket
// with unread input resets it and the peer would lose the frame. wg counts
// the lingering goroutine.
func (l *limiter) refuseConn(nc net.Conn, reason error, wg *sync.WaitGroup) {
	l.refusedConns.Add(1)
	if ok, suppressed := l.connLog.allow(time.Now()); ok {
		l.log.Warn("refusing connection", "remote", nc.RemoteAddr().String(), "reason", reason.Error(), "suppressed", suppressed)
	}
	tcp, ok := nc.(*net.TCPConn)
	if !ok || !l.startLinger(nc) {
		_ = nc.Close()
		return
	}
	frame, err := Encode(NewResponse(&Command{}, ResSystemBusy, reason.Error()))
	if err != nil {
		l.endLinger(nc)
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer l.endLinger(nc)
		_ = nc.SetDeadline(time.Now().Add(refuseLinger))
		if _, err := nc.Write(frame); err != nil {
			return
		}
		_ = tcp.CloseWrite()
		_, _ = io.Copy(io.Discard, io.LimitReader(nc, 1<<20))
	}()
}

// refuseConnClosing counts, logs and closes a refused connection without
// a refusal frame (a TLS port: the client is waiting for a handshake).
func (l *limiter) refuseConnClosing(nc net.Conn, reason error) {
	l.refusedConns.Add(1)
	if ok, suppressed := l.connLog.allow(time.Now()); ok {
		l.log.Warn("refusing connection", "remote", nc.RemoteAddr().String(), "reason", reason.Error(), "suppressed", suppressed)
	}
	_ = nc.Close()
}

func (l *limiter) startLinger(nc net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lingering) >= maxLingering {
		return false
	}
	l.lingering[nc] = struct{}{}
	return true
}

// endLinger closes a refused connection, unless closeLingering did.
func (l *limiter) endLinger(nc net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.lingering[nc]; ok {
		delete(l.lingering, nc)
		_ = nc.Close()
	}
}

// closeLingering closes every refused connection still lingering, on
// Shutdown.
func (l *limiter) closeLingering() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for nc := range l.lingering {
		_ = nc.Close()
		delete(l.lingering, nc)
	}
}

// connLimits is one connection's state for the limits. Only the read loop
// touches the bucket and the refusal window; inflight is atomic.
type connLimits struct {
	inflight atomic.Int32 // handlers running or parked
	armed    time.Time    // when the idle read deadline was last set

	tokens      float64
	last        time.Time // of the bucket's last refill; zero: full
	windowStart time.Time
	refusals    int
}

// allowRequest takes a token from the connection's bucket for req. Without
// one it answers req SYSTEM_BUSY, or, when the connection keeps exceeding
// its rate, closes it; either way req is not served.
func (c *Conn) allowRequest(req *Command) bool {
	l := c.opts.limits
	if l == nil || l.cfg.MaxRequestRate <= 0 {
		return true
	}
	st := &c.lim
	now := time.Now()
	if st.last.IsZero() {
		st.tokens = l.burst
	} else {
		st.tokens = min(l.burst, st.tokens+now.Sub(st.last).Seconds()*l.cfg.MaxRequestRate)
	}
	st.last = now
	if st.tokens >= 1 {
		st.tokens--
		return true
	}
	l.rateLimited.Add(1)
	if n := l.cfg.MaxRateRefusals; n > 0 {
		if now.Sub(st.windowStart) > l.cfg.RateRefusalWindow {
			st.windowStart, st.refusals = now, 0
		}
		if st.refusals++; st.refusals > n {
			l.rateDisconnects.Add(1)
			if ok, suppressed := l.dropLog.allow(now); ok {
				c.log.Warn("disconnecting a connection that keeps exceeding its request rate",
					"refused", st.refusals, "window", l.cfg.RateRefusalWindow, "limit", l.rateRemark, "suppressed", suppressed)
			}
			c.closeWith(errRateLimited)
			return false
		}
	}
	if ok, suppressed := l.rateLog.allow(now); ok {
		c.log.Warn("refusing requests over the rate limit", "code", req.Code, "name", CodeName(req.Code),
			"limit", l.rateRemark, "suppressed", suppressed)
	}
	if !req.IsOneway() {
		if err := c.write(NewResponse(req, ResSystemBusy, l.rateRemark)); err != nil {
			c.log.Debug("write refusal failed", "error", err)
		}
	}
	return false
}

// awaitFrame waits for the first byte of the next frame under
// IdleTimeout, without consuming it, so a timeout never splits a frame. A
// connection with a request in hand (a held long poll) is not idle: the
// wait starts over. It also leaves the deadline for reading the rest of
// the frame.
//
// Setting a deadline costs about 200 ns, too much per frame on a busy
// connection, so the deadline is moved only once idleSlack has passed
// since it was last set, and set idleSlack beyond IdleTimeout: a
// connection is closed after between IdleTimeout and IdleTimeout plus
// idleSlack of silence.
func (c *Conn) awaitFrame(br *bufio.Reader) error {
	l := c.opts.limits
	if l == nil || l.cfg.IdleTimeout <= 0 {
		return nil
	}
	idle := l.cfg.IdleTimeout
	slack := idle / idleSlackDivisor
	for {
		if now := time.Now(); now.Sub(c.lim.armed) >= slack {
			if err := c.nc.SetReadDeadline(now.Add(idle + slack)); err != nil {
				return err
			}
			c.lim.armed = now
		}
		_, err := br.Peek(1)
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if c.lim.inflight.Load() > 0 {
			c.lim.armed = time.Time{}
			continue
		}
		return fmt.Errorf("%w: no frame for %v", errIdle, idle)
	}
}

// idleSlackDivisor sets the idle deadline's slack to IdleTimeout/16.
const idleSlackDivisor = 16

// maxHeader is the header limit the read loop applies.
func (o *connOptions) maxHeader() int {
	if o.limits == nil {
		return 0
	}
	return o.limits.cfg.MaxHeaderSize
}

// noteLimitClose logs and counts a read loop ending for a limit; it
// reports whether it logged, so readFailed does not log again.
func (c *Conn) noteLimitClose(err error) bool {
	l := c.opts.limits
	if l == nil {
		return false
	}
	switch {
	case errors.Is(err, errIdle):
		l.idleClosed.Add(1)
		c.log.Info("closing idle connection", "idle_timeout", l.cfg.IdleTimeout)
		return true
	case errors.Is(err, ErrHeaderTooLarge):
		l.headerRefused.Add(1)
	}
	return false
}

// refusalKey holds, on a client's connection, the failure response a server
// sent with opaque 0 (no call of ours) before closing: why it refused us.
type refusalKey struct{}

// noteRefusal keeps an unsolicited failure response so the connection's
// close error can carry its remark.
func (c *Conn) noteRefusal(resp *Command) {
	if resp.Opaque == 0 && resp.Code != ResSuccess {
		c.SetValue(refusalKey{}, &ResponseError{Code: resp.Code, Remark: resp.Remark})
	}
}

// withRefusal adds the server's refusal, if it sent one, to a close cause.
func (c *Conn) withRefusal(cause error) error {
	if re, ok := c.Value(refusalKey{}).(*ResponseError); ok {
		return fmt.Errorf("%w (server refused: %w)", cause, re)
	}
	return cause
}

// logThrottle lets one line through per throttleInterval and counts the
// lines it held back, so a flood of refusals costs a line per interval.
type logThrottle struct {
	mu         sync.Mutex
	next       time.Time
	suppressed int
}

func (t *logThrottle) allow(now time.Time) (ok bool, suppressed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Before(t.next) {
		t.suppressed++
		return false, 0
	}
	t.next = now.Add(throttleInterval)
	suppressed, t.suppressed = t.suppressed, 0
	return true, suppressed
}
