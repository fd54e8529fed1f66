package remoting

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// DefaultInvokeTimeout bounds a call whose context has no deadline.
const DefaultInvokeTimeout = 3 * time.Second

// readBufferSize is the bufio size on each connection: large enough that a
// typical send (header plus a few KiB of body) arrives in one read.
const readBufferSize = 64 << 10

// maxRetainedWriteBuffer caps the frame-head buffers returned to the pool,
// so one huge header does not pin its size for the process's lifetime.
const maxRetainedWriteBuffer = 64 << 10

var connIDs atomic.Uint64

// errClosedLocally is the cause recorded when our side closes a connection.
var errClosedLocally = errors.New("closed locally")

// connOptions is what a Server or Client hands each of its connections.
type connOptions struct {
	maxFrame      int
	writeTimeout  time.Duration
	maxConcurrent int
	busyWait      time.Duration // 0: refuse at once
	logger        hclog.Logger
	mux           *mux
	// group counts the connection's goroutines; its owner waits on it.
	group *sync.WaitGroup
	// admit, if set, is asked before a request's handler starts and release
	// is called when it ends; the server drains through them on Shutdown.
	admit   func() bool
	release func()
	onClose func(*Conn)
	// limits is the server's Limits state; nil on a Client's connections.
	limits *limiter
	// probeAfter, on a Client's connections, turns on liveness probes
	// (liveness.go); zero leaves them off.
	probeAfter time.Duration
	// detectTLS (a plaintext server) closes a connection that opens with
	// a TLS ClientHello, naming it; plainClient (a plaintext client)
	// explains a connection closed before any answer (tls.go).
	detectTLS, plainClient bool
}

// Conn is one remoting connection, on either side. It reads frames in one
// goroutine, runs each request's handler in its own goroutine, and matches
// responses to the calls it sent by opaque, so both ends can have requests
// in flight at once.
type Conn struct {
	id   uint64
	nc   net.Conn
	opts *connOptions
	log  hclog.Logger
	ctx  context.Context
	stop context.CancelFunc
	sem  chan struct{}
	lim  connLimits

	nextOpaque atomic.Int32
	values     sync.Map

	// Writes are group-committed: frames queued while one goroutine is
	// writing go out together in its next writev (see write).
	wmu     sync.Mutex
	wq      *writeBatch
	writing bool

	pmu      sync.Mutex
	pending  map[int32]pendingCall
	closed   bool
	closeErr error

	// Liveness (liveness.go): when the last frame arrived (mono), whether
	// a probe is out, and the ping answers being written.
	lastRecv atomic.Int64
	probing  atomic.Bool
	pongs    atomic.Int32
}

func newConn(nc net.Conn, opts *connOptions) *Conn {
	ctx, stop := context.WithCancel(context.Background())
	c := &Conn{
		id:      connIDs.Add(1),
		nc:      nc,
		opts:    opts,
		ctx:     ctx,
		stop:    stop,
		sem:     make(chan struct{}, opts.maxConcurrent),
		pending: make(map[int32]pendingCall),
	}
	c.lastRecv.Store(mono())
	c.log = opts.logger.With("conn", c.id, "remote", nc.RemoteAddr().String())
	return c
}

// start launches the read loop. The owner calls it while it may still Add
// to opts.group.
func (c *Conn) start() {
	c.opts.group.Add(1)
	go c.readLoop()
	if c.opts.probeAfter > 0 {
		c.opts.group.Add(1)
		go c.probeLoop()
	}
}

// ID returns a process-unique connection number, for logs and maps.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// LocalAddr returns our end's address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// SetValue stores per-connection state (for example the client id a
// heartbeat announced). It lives as long as the Conn.
func (c *Conn) SetValue(key, value any) { c.values.Store(key, value) }

// Value returns what SetValue stored under key, or nil.
func (c *Conn) Value(key any) any {
	v, _ := c.values.Load(key)
	return v
}

// Done returns a channel closed when the connection has closed.
func (c *Conn) Done() <-chan struct{} { return c.ctx.Done() }

// Close closes the connection, failing its pending calls with ErrConnClosed
// and cancelling its handlers' context. It does not wait for handlers, so a
// handler may close its own connection.
func (c *Conn) Close() error {
	c.closeWith(errClosedLocally)
	return nil
}

func (c *Conn) isClosed() bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.closed
}

func (c *Conn) closeWith(cause error) {
	c.pmu.Lock()
	if c.closed {
		c.pmu.Unlock()
		return
	}
	c.closed, c.closeErr = true, cause
	pending := c.pending
	c.pending = nil
	c.pmu.Unlock()

	c.stop()
	_ = c.nc.Close()
	err := fmt.Errorf("%w: %w", ErrConnClosed, cause)
	for _, pc := range pending {
		pc.done(nil, err)
	}
	if c.opts.onClose != nil {
		c.opts.onClose(c)
	}
}

func (c *Conn) readLoop() {
	defer c.opts.group.Done()
	br := bufio.NewReaderSize(c.nc, readBufferSize)
	if c.opts.detectTLS && c.sawTLSHello(br) {
		return
	}
	for first := true; ; first = false {
		err := c.awaitFrame(br)
		var cmd *Command
		if err == nil {
			cmd, err = readCommand(br, c.opts.maxFrame, c.opts.maxHeader())
		}
		if err != nil {
			if first {
				err = c.firstReadHint(err)
			}
			c.readFailed(err)
			return
		}
		c.noteReceived()
		if cmd.IsResponse() {
			c.deliver(cmd)
			continue
		}
		if cmd.Code == ReqPing {
			c.pong(cmd)
			continue
		}
		c.dispatch(cmd)
	}
}

func (c *Conn) readFailed(err error) {
	switch {
	case c.noteLimitClose(err):
	case isCodecError(err):
		c.log.Warn("closing connection after bad frame", "error", err)
	case c.isClosed(), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.log.Debug("connection closed", "error", err)
	default:
		c.log.Info("connection read failed", "error", err)
	}
	c.closeWith(c.withRefusal(fmt.Errorf("read: %w", err)))
}

// isCodecError reports whether err is one of the frame decoder's sentinels.
func isCodecError(err error) bool {
	return errors.Is(err, ErrMalformedFrame) || errors.Is(err, ErrBadHeader) || errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrHeaderTooLarge)
}

// deliver completes the call waiting for resp. A response nobody waits for
// is a call that already timed out.
func (c *Conn) deliver(resp *Command) {
	if pc, ok := c.takePending(resp.Opaque); ok {
		pc.done(resp, nil)
		return
	}
	c.noteRefusal(resp)
	c.log.Debug("response without pending call", "opaque", resp.Opaque, "code", resp.Code)
}

func (c *Conn) takePending(opaque int32) (pendingCall, bool) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	pc, ok := c.pending[opaque]
	delete(c.pending, opaque)
	return pc, ok
}

// dispatch starts req's handler. When the connection already runs its
// maximum, it stops reading (the peer feels TCP back-pressure) until a
// handler ends, and refuses req with SYSTEM_BUSY if none does within
// ServerConfig.BusyWait: queueing would let one client grow our memory without bound,
// and a handler that waits on the peer must not wait for ever on reads.
func (c *Conn) dispatch(req *Command) {
	if !c.allowRequest(req) {
		return
	}
	select {
	case c.sem <- struct{}{}:
	default:
		t := time.NewTimer(c.opts.busyWait)
		select {
		case c.sem <- struct{}{}:
			t.Stop()
		case <-t.C:
			c.refuse(req, ResSystemBusy, fmt.Sprintf("too many requests in flight on this connection (limit %d)", cap(c.sem)))
			return
		case <-c.ctx.Done():
			t.Stop()
			return
		}
	}
	if c.opts.admit != nil && !c.opts.admit() {
		<-c.sem
		c.refuse(req, ResServiceNotAvailable, "server is shutting down")
		return
	}
	c.lim.inflight.Add(1)
	c.opts.group.Add(1)
	go c.serve(req)
}

func (c *Conn) refuse(req *Command, code int16, remark string) {
	c.log.Warn("refusing request", "code", req.Code, "name", CodeName(req.Code), "reason", remark)
	if req.IsOneway() {
		return
	}
	if err := c.write(NewResponse(req, code, remark)); err != nil {
		c.log.Debug("write refusal failed", "error", err)
	}
}

func (c *Conn) serve(req *Command) {
	defer c.opts.group.Done()
	defer c.lim.inflight.Add(-1)
	s := &slot{sem: c.sem}
	defer s.free()
	if c.opts.release != nil {
		defer c.opts.release()
	}
	resp := c.opts.mux.serve(context.WithValue(c.ctx, slotKey{}, s), c, req)
	if resp == nil || req.IsOneway() {
		return
	}
	resp.Opaque = req.Opaque
	resp.SerializeType = req.SerializeType
	resp.Flag = (resp.Flag | FlagResponse) &^ FlagOneway
	if err := c.write(resp); err != nil {
		c.log.Debug("write response failed", "code", req.Code, "opaque", req.Opaque, "error", err)
	}
}

// write sends one whole frame. Concurrent writers are group-committed: the
// one that finds the connection idle writes its frame and then, until the
// queue is empty, every frame queued meanwhile, one writev per batch; the
// others wait for the write of their batch. Under load a busy connection
// so costs one syscall per batch instead of per frame, and nobody waits on
// a lock held across a syscall. A write that fails or times out may have
// sent part of a frame, after which the stream is unusable, so it closes the
// connection (outside the write lock: close hooks may write elsewhere). An
// encoding error leaves the connection intact.
func (c *Conn) write(cmd *Command) error {
	ioErr, err := c.writeLocked(cmd)
	if ioErr != nil {
		c.closeWith(fmt.Errorf("write: %w", ioErr))
		return fmt.Errorf("%w: write: %w", ErrConnClosed, ioErr)
	}
	return err
}

func (c *Conn) writeLocked(cmd *Command) (ioErr, err error) {
	hp := headPool.Get().(*[]byte)
	head, err := appendFrameHead((*hp)[:0], cmd)
	if err != nil {
		headPool.Put(hp)
		return nil, err
	}
	*hp = head
	c.wmu.Lock()
	if c.isClosed() {
		c.wmu.Unlock()
		headPool.Put(hp)
		return nil, fmt.Errorf("%w: %w", ErrConnClosed, c.cause())
	}
	mine := c.wq
	if mine == nil {
		mine = &writeBatch{done: make(chan struct{})}
		c.wq = mine
	}
	mine.add(hp, cmd.Body)
	if c.writing {
		// The goroutine writing now will send this frame with its next
		// batch; wait for that write.
		c.wmu.Unlock()
		<-mine.done
		return mine.err, nil
	}
	c.writing = true
	for c.wq != nil {
		b := c.wq
		c.wq = nil
		c.wmu.Unlock()
		c.flush(b)
		c.wmu.Lock()
	}
	c.writing = false
	c.wmu.Unlock()
	return mine.err, nil
}

// flush writes one batch of frames with a single writev and wakes the
// goroutines waiting on it.
func (c *Conn) flush(b *writeBatch) {
	err := c.nc.SetWriteDeadline(time.Now().Add(c.opts.writeTimeout))
	if err == nil {
		_, err = b.bufs.WriteTo(c.nc)
	}
	b.err = err
	for _, hp := range b.heads {
		if cap(*hp) <= maxRetainedWriteBuffer {
			headPool.Put(hp)
		}
	}
	close(b.done)
}

// writeBatch is frames written together: each frame's encoded head and
// its body, in order.
type writeBatch struct {
	bufs  net.Buffers
	heads []*[]byte
	done  chan struct{}
	err   error
}

func (b *writeBatch) add(hp *[]byte, body []byte) {
	b.heads = append(b.heads, hp)
	b.bufs = append(b.bufs, *hp)
	if len(body) > 0 {
		b.bufs = append(b.bufs, body)
	}
}

// headPool recycles frame-head buffers (length word, header, no body).
var headPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (c *Conn) cause() error {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.closeErr
}

// SendOneway sends cmd with the oneway bit set and waits for nothing but
// the write. cmd itself is not modified.
func (c *Conn) SendOneway(ctx context.Context, cmd *Command) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("remoting: oneway %s: %w", CodeName(cmd.Code), err)
	}
	req := *cmd
	req.Opaque = c.nextOpaque.Add(1)
	req.Flag = (req.Flag | FlagOneway) &^ FlagResponse
	return c.write(&req)
}

// Invoke sends cmd as a request and waits for its response, until ctx is
// done or, if ctx has no deadline, for DefaultInvokeTimeout. cmd itself is
// not modified; the request gets an opaque of this connection's. A response
// with a failure code is returned as a response, not an error: use AsError.
func (c *Conn) Invoke(ctx context.Context, cmd *Command) (*Command, error) {
	type result struct {
		resp *Command
		err  error
	}
	ch := make(chan result, 1)
	c.invoke(ctx, cmd, func(resp *Command, err error) { ch <- result{resp, err} })
	r := <-ch
	return r.resp, r.err
}

// invoke registers a call and sends it; done runs exactly once, with the
// response or an error: whoever removes the call from the pending map (the
// read loop, the deadline, a failed write, or Close) completes it. done may
// run on the read loop and must not block.
func (c *Conn) invoke(ctx context.Context, cmd *Command, done func(*Command, error)) {
	c.call(ctx, cmd, false, done)
}

// call is invoke; probe marks a liveness probe (liveness.go).
func (c *Conn) call(ctx context.Context, cmd *Command, probe bool, done func(*Command, error)) {
	ctx, cancel := withDefaultTimeout(ctx)
	req := *cmd
	req.Flag &^= FlagResponse | FlagOneway
	finish := func(resp *Command, err error) {
		cancel()
		done(resp, err)
	}

	c.pmu.Lock()
	if c.closed {
		cause := c.closeErr
		c.pmu.Unlock()
		finish(nil, fmt.Errorf("%w: %w", ErrConnClosed, cause))
		return
	}
	req.Opaque = c.allocOpaqueLocked()
	c.pending[req.Opaque] = pendingCall{done: finish, sent: mono(), probe: probe}
	c.pmu.Unlock()

	// Fires on the caller's deadline or cancellation, and also on our own
	// cancel after completion, when the call is no longer pending.
	context.AfterFunc(ctx, func() {
		if pc, ok := c.takePending(req.Opaque); ok {
			err := callError(ctx, &req)
			c.timedOutInSilence(pc, err) // closed before the caller hears of it
			pc.done(nil, err)
		}
	})
	if err := ctx.Err(); err != nil {
		return // the AfterFunc completes the call
	}
	if err := c.write(&req); err != nil {
		if pc, ok := c.takePending(req.Opaque); ok {
			pc.done(nil, err)
		}
	}
}

// allocOpaqueLocked returns an opaque no pending call uses; wrap-around
// after 2^32 calls must not complete the wrong call.
func (c *Conn) allocOpaqueLocked() int32 {
	for {
		op := c.nextOpaque.Add(1)
		if _, busy := c.pending[op]; !busy {
			return op
		}
	}
}

func callError(ctx context.Context, req *Command) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s opaque %d: %w", ErrTimeout, CodeName(req.Code), req.Opaque, ctx.Err())
	}
	return fmt.Errorf("remoting: %s opaque %d: %w", CodeName(req.Code), req.Opaque, ctx.Err())
}

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultInvokeTimeout)
}
