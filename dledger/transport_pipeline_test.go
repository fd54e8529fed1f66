package dledger

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// refuseTerm7 answers like answerAll, except that an AppendEntries of term
// 7 is refused the way a follower whose log store failed refuses it.
func refuseTerm7(rpc raft.RPC) {
	if req, ok := rpc.Command.(*raft.AppendEntriesRequest); ok && req.Term == 7 {
		rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: false}, nil)
		return
	}
	answerAll(rpc)
}

// sendAsync runs one pipelined AppendEntries and reports its error.
func sendAsync(pl raft.AppendPipeline, req *raft.AppendEntriesRequest) <-chan error {
	out := make(chan error, 1)
	go func() {
		_, err := pl.AppendEntries(req, &raft.AppendEntriesResponse{})
		out <- err
	}()
	return out
}

// TestPipelineEndsAfterAnswerThatStopsRaftsReader: raft's pipelineDecode
// reads one refused (or failed) answer and stops reading; the next send
// must fail at once instead of waiting forever for a reader, which left
// the follower without entries until the leader changed
// (hashicorp/raft#612, the chaos run's 30 s stall after a disk-full step).
func TestPipelineEndsAfterAnswerThatStopsRaftsReader(t *testing.T) {
	for _, c := range []struct {
		name string
		term uint64
	}{{"refused", 7}, {"error answer", 99}} {
		t.Run(c.name, func(t *testing.T) {
			p := newTransportPair(t, refuseTerm7)
			pl, err := p.a.AppendEntriesPipeline("b", p.b.LocalAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer pl.Close()
			if _, err := pl.AppendEntries(&raft.AppendEntriesRequest{Term: c.term, Entries: entriesOf(1, 10, 1)}, &raft.AppendEntriesResponse{}); err != nil {
				t.Fatal(err)
			}
			f := <-pl.Consumer() // raft's reader stops after this answer
			if f.Error() == nil && f.Response().Success {
				t.Fatalf("the first answer succeeded: %+v", f.Response())
			}
			req := &raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 1, Entries: entriesOf(1, 10, 2)}
			select {
			case err := <-sendAsync(pl, req):
				if !errors.Is(err, errPipelineBroken) {
					t.Fatalf("send after the reader stopped: %v, want %v", err, errPipelineBroken)
				}
			case <-time.After(rpcTimeout / 2):
				t.Fatal("a send after raft's reader stopped is still waiting")
			}
		})
	}
}

// TestPipelineSendStallIsBounded: if nobody reads the answers at all, a
// send waits at most one RPC timeout for the answer reader.
func TestPipelineSendStallIsBounded(t *testing.T) {
	p := newTransportPair(t, answerAll)
	p.a.timeout = 300 * time.Millisecond
	pl, err := p.a.AppendEntriesPipeline("b", p.b.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	first := sendAsync(pl, &raft.AppendEntriesRequest{Term: 3, Entries: entriesOf(1, 10, 1)})
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case err := <-sendAsync(pl, &raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 1, Entries: entriesOf(1, 10, 2)}):
		if !errors.Is(err, errPipelineStalled) {
			t.Fatalf("send with an unread answer: %v, want %v", err, errPipelineStalled)
		}
	case <-time.After(10 * p.a.timeout):
		t.Fatal("a send with an unread answer waited ten RPC timeouts")
	}
	if d := time.Since(start); d < p.a.timeout/2 {
		t.Fatalf("the stalled send failed after %v, before the reader could have taken it", d)
	}
}
