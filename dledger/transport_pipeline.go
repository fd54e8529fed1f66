package dledger

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

var (
	// errPipelineClosed is returned by a pipeline's calls after Close.
	errPipelineClosed = errors.New("dledger: append pipeline closed")
	// errPipelineBroken is returned by AppendEntries once an answer has
	// ended raft's reading of the pipeline.
	errPipelineBroken = errors.New("dledger: append pipeline ended by a failed answer")
	// errPipelineStalled is returned by AppendEntries when the answer
	// reader has not taken a request for a whole RPC timeout.
	errPipelineStalled = errors.New("dledger: append pipeline stalled")
)

// AppendEntriesPipeline implements raft.Transport: requests go out on a
// connection of the pipeline's own without waiting for the answers, which
// a goroutine reads in order.
func (t *netTransport) AppendEntriesPipeline(_ raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	c, err := t.conn(target)
	if err != nil {
		return nil, err
	}
	p := &pipeline{t: t, c: c, inflight: make(chan *appendFuture, pipelineDepth-2),
		done: make(chan raft.AppendFuture, pipelineDepth-2), closed: make(chan struct{}), broken: make(chan struct{})}
	go p.readAnswers()
	return p, nil
}

// pipeline is one follower's pipelined AppendEntries stream.
//
// raft's reader of Consumer (pipelineDecode) stops at the first answer that
// failed, did not succeed or carries a newer term, and its sender may then
// still send once more before it notices: with unbuffered hand-offs that
// send would wait forever for a reader that is itself waiting to deliver,
// and the follower would get heartbeats but no entries until the leader
// changed (hashicorp/raft#612). So readAnswers closes broken after
// delivering such an answer, and AppendEntries fails at once from then on.
type pipeline struct {
	t        *netTransport
	c        *peerConn
	inflight chan *appendFuture
	done     chan raft.AppendFuture
	once     sync.Once
	closed   chan struct{}
	broken   chan struct{}
}

// AppendEntries implements raft.AppendPipeline.
func (p *pipeline) AppendEntries(req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if err := checkAppendRequest(req); err != nil {
		return nil, err
	}
	select {
	case <-p.broken:
		return nil, errPipelineBroken
	default:
	}
	f := &appendFuture{start: time.Now(), req: req, resp: resp, ready: make(chan struct{})}
	if p.t.timeout > 0 {
		_ = p.c.conn.SetWriteDeadline(time.Now().Add(p.t.timeout))
	}
	if err := p.c.sendAppend(req); err != nil {
		p.c.release()
		return nil, err
	}
	return p.handOff(f)
}

// handOff gives f to the answer reader. The wait is bounded: by the end
// of the pipeline and, should the reader be stuck, by the RPC timeout.
func (p *pipeline) handOff(f *appendFuture) (raft.AppendFuture, error) {
	select {
	case p.inflight <- f:
		return f, nil
	default:
	}
	var stall <-chan time.Time
	if p.t.timeout > 0 {
		tm := time.NewTimer(p.t.timeout)
		defer tm.Stop()
		stall = tm.C
	}
	select {
	case p.inflight <- f:
		return f, nil
	case <-p.closed:
		return nil, errPipelineClosed
	case <-p.broken:
		return nil, errPipelineBroken
	case <-stall:
		return nil, errPipelineStalled
	}
}

// endsDecoding reports whether raft's pipelineDecode stops reading after
// this answer.
func endsDecoding(f *appendFuture, err error) bool {
	return err != nil || !f.resp.Success || f.resp.Term > f.req.Term
}

// readAnswers answers the futures in the order their requests went out.
func (p *pipeline) readAnswers() {
	for {
		select {
		case f := <-p.inflight:
			if p.t.timeout > 0 {
				_ = p.c.conn.SetReadDeadline(time.Now().Add(p.t.timeout))
			}
			rpcErr, err := readAppendResponse(p.c.r, f.resp)
			if err != nil {
				p.c.release()
			} else if rpcErr != "" {
				err = errors.New(rpcErr)
			}
			if err == nil && p.t.onAppended != nil {
				p.t.onAppended(p.c.target, f.req, f.resp)
			}
			f.respond(err)
			select {
			case p.done <- f:
			case <-p.closed:
				return
			}
			if endsDecoding(f, err) {
				close(p.broken)
				return
			}
		case <-p.closed:
			return
		}
	}
}

// Consumer implements raft.AppendPipeline.
func (p *pipeline) Consumer() <-chan raft.AppendFuture { return p.done }

// Close implements raft.AppendPipeline: the connection is closed, not
// pooled (answers may still be on their way).
func (p *pipeline) Close() error {
	p.once.Do(func() {
		p.c.release()
		close(p.closed)
	})
	return nil
}

// appendFuture is one pipelined AppendEntries.
type appendFuture struct {
	start time.Time
	req   *raft.AppendEntriesRequest
	resp  *raft.AppendEntriesResponse
	err   error
	ready chan struct{}
}

func (f *appendFuture) respond(err error) {
	f.err = err
	close(f.ready)
}

// Error implements raft.Future: it waits for the answer.
func (f *appendFuture) Error() error {
	<-f.ready
	return f.err
}

// Start implements raft.AppendFuture.
func (f *appendFuture) Start() time.Time { return f.start }

// Request implements raft.AppendFuture.
func (f *appendFuture) Request() *raft.AppendEntriesRequest { return f.req }

// Response implements raft.AppendFuture.
func (f *appendFuture) Response() *raft.AppendEntriesResponse { return f.resp }
