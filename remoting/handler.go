package remoting

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
)

// slot is a running handler's place in its connection's concurrency limit.
type slot struct {
	once sync.Once
	sem  chan struct{}
}

func (s *slot) free() { s.once.Do(func() { <-s.sem }) }

type slotKey struct{}

// Park gives up the place the handler of ctx holds in its connection's
// limit of running handlers (ServerConfig.MaxConcurrentPerConn), for a
// handler about to wait a long time for an event rather than for work: a
// held long-poll pull. Parked handlers do not count against the limit, so
// a consumer can hold one pull per queue on one connection whatever its
// queue count. Calling it again, or outside a handler, does nothing.
func Park(ctx context.Context) {
	if s, ok := ctx.Value(slotKey{}).(*slot); ok {
		s.free()
	}
}

// Handler answers one request. It runs in its own goroutine; ctx is
// cancelled when the connection closes, so a handler that parks (a long
// poll) must return once ctx is done. The returned command is the response:
// the connection sets its opaque, response bit and serialisation from req,
// so NewResponse is a convenience, not a requirement. A nil return sends
// nothing, and a oneway request's response is dropped.
type Handler interface {
	ServeRemoting(ctx context.Context, c *Conn, req *Command) *Command
}

var _ Handler = HandlerFunc(nil)

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, c *Conn, req *Command) *Command

// ServeRemoting calls f.
func (f HandlerFunc) ServeRemoting(ctx context.Context, c *Conn, req *Command) *Command {
	return f(ctx, c, req)
}

// mux routes requests to handlers by code. Registration may happen while
// requests are served.
type mux struct {
	mu       sync.RWMutex
	handlers map[int16]Handler
}

func (m *mux) handle(code int16, h Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.handlers == nil {
		m.handlers = make(map[int16]Handler)
	}
	m.handlers[code] = h
}

func (m *mux) lookup(code int16) Handler {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.handlers[code]
}

// serve runs the handler for req, turning an unknown code into
// REQUEST_CODE_NOT_SUPPORTED and a panic into SYSTEM_ERROR: one bad request
// must never take the process down.
func (m *mux) serve(ctx context.Context, c *Conn, req *Command) (resp *Command) {
	h := m.lookup(req.Code)
	if h == nil {
		return NewResponse(req, ResRequestCodeNotSupported,
			fmt.Sprintf("request code %d (%s) not supported", req.Code, CodeName(req.Code)))
	}
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("handler panicked", "code", req.Code, "name", CodeName(req.Code),
				"remote", c.RemoteAddr(), "panic", r, "stack", string(debug.Stack()))
			resp = NewResponse(req, ResSystemError, fmt.Sprintf("%s handler panicked: %v", CodeName(req.Code), r))
		}
	}()
	return h.ServeRemoting(ctx, c, req)
}
