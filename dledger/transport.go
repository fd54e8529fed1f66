package dledger

// raft's network transport, with AppendEntries in a binary layout.
//
// hashicorp/raft's NetworkTransport encodes every RPC with msgpack: the
// leader copies each entry's data into its write buffer for every
// follower, and each follower allocates every entry afresh as it decodes.
// AppendEntries carries all the data, so it has a layout of its own
// (transport_codec.go): the leader writes entries from their own slices
// (one writev on plain TCP, no copy in user space), a follower reads all
// of a request's data into one buffer with one read. The rarer RPCs —
// votes, pre-votes, snapshots, TimeoutNow — keep NetworkTransport's
// msgpack encoding byte for byte, and a node also serves msgpack
// AppendEntries, so a node of this version takes replication from a
// leader of an older one (upgrade followers first; docs/OPERATIONS.md).
//
// Connections are pooled per peer as in NetworkTransport: one request at
// a time each, a pipeline holding a connection of its own.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// RPC types: 0–4 are raft's NetworkTransport's, in msgpack (frozen);
// rpcAppendBinary is AppendEntries in the binary layout.
const (
	rpcAppendMsgpack uint8 = iota
	rpcRequestVote
	rpcInstallSnapshot
	rpcTimeoutNow
	rpcRequestPreVote
	rpcAppendBinary uint8 = 0x10
)

const (
	connBufferSize = 256 << 10
	// readBufferSize is small on purpose: bufio reads a request's data
	// blob straight into its buffer, bypassing its own, once the blob is
	// at least this large and the buffer empty, so only the first and
	// last few KiB of a blob are copied.
	readBufferSize = 16 << 10
	// writevMin is the data size from which a plain TCP connection sends
	// AppendEntries data from the entries' slices instead of copying it
	// into the write buffer.
	writevMin = 16 << 10
	// snapshotTimeoutScale: an InstallSnapshot's deadline grows by one
	// timeout per this many bytes (raft's DefaultTimeoutScale).
	snapshotTimeoutScale = 256 << 10
	// pipelineDepth is how many AppendEntries a pipeline has in flight
	// (raft's DefaultMaxRPCsInFlight).
	pipelineDepth = 2
)

var (
	_ raft.Transport   = (*netTransport)(nil)
	_ raft.WithPreVote = (*netTransport)(nil)
	_ raft.WithClose   = (*netTransport)(nil)
)

// errTransportClosed is returned by calls after Close.
var errTransportClosed = errors.New("dledger: transport closed")

// netTransport is a raft.Transport over a raft.StreamLayer.
type netTransport struct {
	stream  raft.StreamLayer
	timeout time.Duration
	maxPool int
	log     hclog.Logger

	// onAppended, when set (before raft starts), sees every successful
	// AppendEntries answer this node receives as a leader (earlyack.go).
	onAppended func(target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse)

	consumeCh chan raft.RPC
	hbMu      sync.Mutex
	hbFn      func(raft.RPC)

	poolMu sync.Mutex
	pool   map[raft.ServerAddress][]*peerConn

	inMu    sync.Mutex
	inbound map[net.Conn]struct{}

	ctxMu  sync.RWMutex
	ctx    context.Context // cancelled by CloseStreams: handlers stop
	cancel context.CancelFunc

	closeOnce sync.Once
	closed    chan struct{}
	wg        sync.WaitGroup
}

// newNetTransport serves stream's connections and dials peers through it;
// timeout bounds each RPC's I/O.
func newNetTransport(stream raft.StreamLayer, maxPool int, timeout time.Duration, log hclog.Logger) *netTransport {
	t := &netTransport{stream: stream, timeout: timeout, maxPool: maxPool, log: log,
		consumeCh: make(chan raft.RPC), pool: map[raft.ServerAddress][]*peerConn{},
		inbound: map[net.Conn]struct{}{}, closed: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.wg.Add(1)
	go t.listen()
	return t
}

// peerConn is one outbound connection.
type peerConn struct {
	target raft.ServerAddress
	conn   net.Conn
	r      *bufio.Reader
	w      *bufio.Writer
	dec    *codec.Decoder
	enc    *codec.Encoder
	// vec: the connection writes net.Buffers with one writev (plain TCP).
	vec bool
	hdr []byte // scratch for AppendEntries headers
}

// msgpackHandle is the codec of the msgpack RPCs. None of those this
// transport sends holds a time, the one thing NetworkTransport's encoder
// option changes; its decoder uses the defaults too.
func msgpackHandle() *codec.MsgpackHandle { return &codec.MsgpackHandle{} }

func newPeerConn(target raft.ServerAddress, conn net.Conn) *peerConn {
	c := &peerConn{target: target, conn: conn, r: bufio.NewReaderSize(conn, readBufferSize),
		w: bufio.NewWriterSize(conn, connBufferSize)}
	_, c.vec = conn.(*net.TCPConn)
	c.dec = codec.NewDecoder(c.r, msgpackHandle())
	c.enc = codec.NewEncoder(c.w, msgpackHandle())
	return c
}

func (c *peerConn) release() { _ = c.conn.Close() }

// Consumer implements raft.Transport.
func (t *netTransport) Consumer() <-chan raft.RPC { return t.consumeCh }

// LocalAddr implements raft.Transport.
func (t *netTransport) LocalAddr() raft.ServerAddress {
	return raft.ServerAddress(t.stream.Addr().String())
}

// SetHeartbeatHandler implements raft.Transport.
func (t *netTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	t.hbMu.Lock()
	t.hbFn = cb
	t.hbMu.Unlock()
}

// EncodePeer implements raft.Transport.
func (t *netTransport) EncodePeer(_ raft.ServerID, addr raft.ServerAddress) []byte {
	return []byte(addr)
}

// DecodePeer implements raft.Transport.
func (t *netTransport) DecodePeer(b []byte) raft.ServerAddress { return raft.ServerAddress(b) }

func (t *netTransport) isClosed() bool {
	select {
	case <-t.closed:
		return true
	default:
		return false
	}
}

// conn takes a pooled connection to target or dials one.
func (t *netTransport) conn(target raft.ServerAddress) (*peerConn, error) {
	if t.isClosed() {
		return nil, errTransportClosed
	}
	t.poolMu.Lock()
	if cs := t.pool[target]; len(cs) > 0 {
		c := cs[len(cs)-1]
		cs[len(cs)-1] = nil
		t.pool[target] = cs[:len(cs)-1]
		t.poolMu.Unlock()
		return c, nil
	}
	t.poolMu.Unlock()
	nc, err := t.stream.Dial(target, t.timeout)
	if err != nil {
		return nil, err
	}
	return newPeerConn(target, nc), nil
}

// putBack returns c to the pool, or closes it when the pool is full.
func (t *netTransport) putBack(c *peerConn) {
	t.poolMu.Lock()
	defer t.poolMu.Unlock()
	if cs := t.pool[c.target]; !t.isClosed() && len(cs) < t.maxPool {
		t.pool[c.target] = append(cs, c)
		return
	}
	c.release()
}

func (t *netTransport) deadline(c *peerConn) {
	if t.timeout > 0 {
		_ = c.conn.SetDeadline(time.Now().Add(t.timeout))
	}
}

// AppendEntries implements raft.Transport.
func (t *netTransport) AppendEntries(_ raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if err := checkAppendRequest(req); err != nil {
		return err
	}
	c, err := t.conn(target)
	if err != nil {
		return err
	}
	t.deadline(c)
	if err := c.sendAppend(req); err != nil {
		c.release()
		return err
	}
	err = t.finish(c, func() (string, error) { return readAppendResponse(c.r, resp) })
	if err == nil && t.onAppended != nil {
		t.onAppended(target, req, resp)
	}
	return err
}

// finish reads a response with read and pools c when the exchange left it
// usable.
func (t *netTransport) finish(c *peerConn, read func() (string, error)) error {
	rpcErr, err := read()
	if err != nil {
		c.release()
		return err
	}
	t.putBack(c)
	if rpcErr != "" {
		return errors.New(rpcErr)
	}
	return nil
}

// sendAppend writes req: its header through the write buffer, its data
// from the entries' slices with one writev when that saves a copy.
func (c *peerConn) sendAppend(req *raft.AppendEntriesRequest) error {
	c.hdr = appendAppendRequest(c.hdr[:0], req)
	if !c.vec || blobLen(req.Entries) < writevMin {
		_, _ = c.w.Write(c.hdr)
		for _, e := range req.Entries {
			_, _ = c.w.Write(e.Data)
			_, _ = c.w.Write(e.Extensions)
		}
		return c.w.Flush()
	}
	if err := c.w.Flush(); err != nil { // nothing buffered, normally
		return err
	}
	bufs := make(net.Buffers, 0, 1+2*len(req.Entries))
	bufs = append(bufs, c.hdr)
	for _, e := range req.Entries {
		if len(e.Data) > 0 {
			bufs = append(bufs, e.Data)
		}
		if len(e.Extensions) > 0 {
			bufs = append(bufs, e.Extensions)
		}
	}
	_, err := bufs.WriteTo(c.conn)
	return err
}

// msgpackRPC sends one msgpack RPC and decodes its answer into resp.
func (t *netTransport) msgpackRPC(target raft.ServerAddress, typ uint8, args, resp any) error {
	c, err := t.conn(target)
	if err != nil {
		return err
	}
	t.deadline(c)
	if err := c.sendMsgpack(typ, args); err != nil {
		c.release()
		return err
	}
	return t.finish(c, func() (string, error) { return c.readMsgpack(resp) })
}

func (c *peerConn) sendMsgpack(typ uint8, args any) error {
	if err := c.w.WriteByte(typ); err != nil {
		return err
	}
	if err := c.enc.Encode(args); err != nil {
		return err
	}
	return c.w.Flush()
}

// readMsgpack reads NetworkTransport's answer: an error string, then the
// response.
func (c *peerConn) readMsgpack(resp any) (string, error) {
	var rpcErr string
	if err := c.dec.Decode(&rpcErr); err != nil {
		return "", err
	}
	if err := c.dec.Decode(resp); err != nil {
		return "", err
	}
	return rpcErr, nil
}

// RequestVote implements raft.Transport.
func (t *netTransport) RequestVote(_ raft.ServerID, target raft.ServerAddress, req *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return t.msgpackRPC(target, rpcRequestVote, req, resp)
}

// RequestPreVote implements raft.WithPreVote.
func (t *netTransport) RequestPreVote(_ raft.ServerID, target raft.ServerAddress, req *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.msgpackRPC(target, rpcRequestPreVote, req, resp)
}

// TimeoutNow implements raft.Transport.
func (t *netTransport) TimeoutNow(_ raft.ServerID, target raft.ServerAddress, req *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return t.msgpackRPC(target, rpcTimeoutNow, req, resp)
}

// InstallSnapshot implements raft.Transport: the request, then the
// snapshot's bytes, on a connection of its own that is not pooled.
func (t *netTransport) InstallSnapshot(_ raft.ServerID, target raft.ServerAddress, req *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	c, err := t.conn(target)
	if err != nil {
		return err
	}
	defer c.release()
	if t.timeout > 0 {
		d := max(t.timeout, t.timeout*time.Duration(req.Size/snapshotTimeoutScale))
		_ = c.conn.SetDeadline(time.Now().Add(d))
	}
	if err := c.w.WriteByte(rpcInstallSnapshot); err != nil {
		return err
	}
	if err := c.enc.Encode(req); err != nil {
		return err
	}
	if _, err := io.Copy(c.w, data); err != nil {
		return err
	}
	if err := c.w.Flush(); err != nil {
		return err
	}
	rpcErr, err := c.readMsgpack(resp)
	if err == nil && rpcErr != "" {
		err = errors.New(rpcErr)
	}
	return err
}

// CloseStreams closes the pooled connections and stops the handlers of
// accepted ones at their next request, as NetworkTransport's does: the
// peers' handlers blocked on a pooled connection are released.
func (t *netTransport) CloseStreams() {
	t.poolMu.Lock()
	for addr, cs := range t.pool {
		for _, c := range cs {
			c.release()
		}
		delete(t.pool, addr)
	}
	t.poolMu.Unlock()
	t.ctxMu.Lock()
	t.cancel()
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.ctxMu.Unlock()
}

// Close implements raft.WithClose: stops accepting, closes every
// connection and waits for the handlers.
func (t *netTransport) Close() error {
	t.closeOnce.Do(func() {
		close(t.closed)
		_ = t.stream.Close()
		t.CloseStreams()
		t.inMu.Lock()
		for c := range t.inbound {
			_ = c.Close()
		}
		t.inMu.Unlock()
		t.ctxMu.Lock()
		t.cancel()
		t.ctxMu.Unlock()
	})
	t.wg.Wait()
	return nil
}

func (t *netTransport) String() string { return fmt.Sprintf("transport(%s)", t.LocalAddr()) }
