package dledger

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// listen accepts peers' connections until Close.
func (t *netTransport) listen() {
	defer t.wg.Done()
	delay := time.Duration(0)
	for {
		nc, err := t.stream.Accept()
		if err != nil {
			if t.isClosed() {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			t.log.Error("failed to accept raft connection", "error", err)
			select {
			case <-t.closed:
				return
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		if !t.track(nc) {
			_ = nc.Close()
			return
		}
		t.ctxMu.RLock()
		ctx := t.ctx
		t.ctxMu.RUnlock()
		t.wg.Add(1)
		go t.serve(ctx, nc)
	}
}

// track registers an accepted connection so Close can close it; false
// once closed.
func (t *netTransport) track(nc net.Conn) bool {
	t.inMu.Lock()
	defer t.inMu.Unlock()
	if t.isClosed() {
		return false
	}
	t.inbound[nc] = struct{}{}
	return true
}

// handler is the state of one accepted connection.
type handler struct {
	t       *netTransport
	r       *bufio.Reader
	w       *bufio.Writer
	dec     *codec.Decoder
	enc     *codec.Encoder
	scratch []byte // entry headers of binary AppendEntries
	out     []byte // binary responses
}

// serve answers one connection's requests, one at a time, until it fails
// or the transport's streams are closed.
func (t *netTransport) serve(ctx context.Context, nc net.Conn) {
	defer t.wg.Done()
	defer func() {
		t.inMu.Lock()
		delete(t.inbound, nc)
		t.inMu.Unlock()
		_ = nc.Close()
	}()
	h := &handler{t: t, r: bufio.NewReaderSize(nc, readBufferSize), w: bufio.NewWriterSize(nc, connBufferSize)}
	h.dec = codec.NewDecoder(h.r, msgpackHandle())
	h.enc = codec.NewEncoder(h.w, msgpackHandle())
	for ctx.Err() == nil {
		if err := h.one(); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !t.isClosed() {
				t.log.Error("failed to serve raft connection", "remote", nc.RemoteAddr().String(), "error", err)
			}
			return
		}
		if err := h.w.Flush(); err != nil {
			if !t.isClosed() {
				t.log.Error("failed to answer raft request", "remote", nc.RemoteAddr().String(), "error", err)
			}
			return
		}
	}
}

// one reads a request, hands it to raft and writes raft's answer.
func (h *handler) one() error {
	typ, err := h.r.ReadByte()
	if err != nil {
		return err
	}
	respCh := make(chan raft.RPCResponse, 1)
	rpc := raft.RPC{RespChan: respCh}
	heartbeat := false
	switch typ {
	case rpcAppendBinary:
		req, err := readAppendRequest(h.r, &h.scratch)
		if err != nil {
			return err
		}
		rpc.Command, heartbeat = req, isInboundHeartbeat(req)
	case rpcAppendMsgpack:
		var req raft.AppendEntriesRequest
		if err := h.dec.Decode(&req); err != nil {
			return err
		}
		rpc.Command, heartbeat = &req, isInboundHeartbeat(&req)
	case rpcRequestVote:
		rpc.Command, err = decodeInto(h.dec, &raft.RequestVoteRequest{})
	case rpcRequestPreVote:
		rpc.Command, err = decodeInto(h.dec, &raft.RequestPreVoteRequest{})
	case rpcTimeoutNow:
		rpc.Command, err = decodeInto(h.dec, &raft.TimeoutNowRequest{})
	case rpcInstallSnapshot:
		var req raft.InstallSnapshotRequest
		if err = h.dec.Decode(&req); err == nil {
			rpc.Command, rpc.Reader = &req, io.LimitReader(h.r, req.Size)
		}
	default:
		return fmt.Errorf("dledger: unknown raft RPC type %d", typ)
	}
	if err != nil {
		return err
	}
	resp, err := h.t.dispatch(rpc, respCh, heartbeat)
	if err != nil {
		return err
	}
	return h.answer(typ, resp)
}

func decodeInto[T any](dec *codec.Decoder, v *T) (any, error) {
	if err := dec.Decode(v); err != nil {
		return nil, err
	}
	return v, nil
}

// isInboundHeartbeat is raft's own test for a heartbeat it may handle
// outside its main loop.
func isInboundHeartbeat(req *raft.AppendEntriesRequest) bool {
	return req.Term != 0 && len(req.Addr) > 0 && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
		len(req.Entries) == 0 && req.LeaderCommitIndex == 0
}

// dispatch hands rpc to raft (heartbeats to its fast path when set) and
// waits for the answer.
func (t *netTransport) dispatch(rpc raft.RPC, respCh chan raft.RPCResponse, heartbeat bool) (raft.RPCResponse, error) {
	var fn func(raft.RPC)
	if heartbeat {
		t.hbMu.Lock()
		fn = t.hbFn
		t.hbMu.Unlock()
	}
	if fn != nil {
		fn(rpc)
	} else {
		select {
		case t.consumeCh <- rpc:
		case <-t.closed:
			return raft.RPCResponse{}, errTransportClosed
		}
	}
	select {
	case resp := <-respCh:
		return resp, nil
	case <-t.closed:
		return raft.RPCResponse{}, errTransportClosed
	}
}

// answer writes resp in the encoding the request came in.
func (h *handler) answer(typ uint8, resp raft.RPCResponse) error {
	rpcErr := ""
	if resp.Error != nil {
		rpcErr = resp.Error.Error()
	}
	if typ == rpcAppendBinary {
		ar, _ := resp.Response.(*raft.AppendEntriesResponse)
		h.out = appendAppendResponse(h.out[:0], ar, rpcErr)
		_, err := h.w.Write(h.out)
		return err
	}
	if err := h.enc.Encode(rpcErr); err != nil {
		return err
	}
	return h.enc.Encode(resp.Response)
}
