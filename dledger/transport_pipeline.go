package dledger

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// errPipelineClosed is returned by a pipeline's calls after Close.
var errPipelineClosed = errors.New("dledger: append pipeline closed")

// AppendEntriesPipeline implements raft.Transport: requests go out on a
// connection of the pipeline's own without waiting for the answers, which
// a goroutine reads in order.
func (t *netTransport) AppendEntriesPipeline(_ raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	c, err := t.conn(target)
	if err != nil {
		return nil, err
	}
	p := &pipeline{t: t, c: c, inflight: make(chan *appendFuture, pipelineDepth-2),
		done: make(chan raft.AppendFuture, pipelineDepth-2), closed: make(chan struct{})}
	go p.readAnswers()
	return p, nil
}

type pipeline struct {
	t        *netTransport
	c        *peerConn
	inflight chan *appendFuture
	done     chan raft.AppendFuture
	once     sync.Once
	closed   chan struct{}
}

// AppendEntries implements raft.AppendPipeline.
func (p *pipeline) AppendEntries(req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if err := checkAppendRequest(req); err != nil {
		return nil, err
	}
	f := &appendFuture{start: time.Now(), req: req, resp: resp, ready: make(chan struct{})}
	if p.t.timeout > 0 {
		_ = p.c.conn.SetWriteDeadline(time.Now().Add(p.t.timeout))
	}
	if err := p.c.sendAppend(req); err != nil {
		p.c.release()
		return nil, err
	}
	select {
	case p.inflight <- f:
		return f, nil
	case <-p.closed:
		return nil, errPipelineClosed
	}
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
