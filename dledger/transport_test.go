package dledger

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"pgregory.net/rapid"
)

// newTCPTransportForTest is a node's transport on plain TCP at bind.
func newTCPTransportForTest(bind string, log hclog.Logger) (*netTransport, error) {
	sl, err := newTCPStream(bind, nil)
	if err != nil {
		return nil, err
	}
	return newNetTransport(sl, peerPool, rpcTimeout, log), nil
}

func encodeAppend(req *raft.AppendEntriesRequest) []byte {
	b := appendAppendRequest(nil, req)
	for _, e := range req.Entries {
		b = append(b, e.Data...)
		b = append(b, e.Extensions...)
	}
	return b
}

func decodeAppend(b []byte) (*raft.AppendEntriesRequest, error) {
	r := bufio.NewReader(bytes.NewReader(b))
	typ, err := r.ReadByte()
	if err != nil {
		return nil, err
	}
	if typ != rpcAppendBinary {
		return nil, fmt.Errorf("type %d", typ)
	}
	var scratch []byte
	return readAppendRequest(r, &scratch)
}

func genBytes(t *rapid.T, label string, maxLen int) []byte {
	b := rapid.SliceOfN(rapid.Byte(), 0, maxLen).Draw(t, label)
	if len(b) == 0 {
		return nil
	}
	return b
}

func genAppend(t *rapid.T) *raft.AppendEntriesRequest {
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(rapid.IntRange(0, 3).Draw(t, "v")),
			ID: genBytes(t, "id", 20), Addr: genBytes(t, "addr", 30)},
		Term: rapid.Uint64().Draw(t, "term"), PrevLogEntry: rapid.Uint64().Draw(t, "prev"),
		PrevLogTerm: rapid.Uint64().Draw(t, "prevTerm"), LeaderCommitIndex: rapid.Uint64().Draw(t, "commit"),
	}
	n := rapid.IntRange(0, 8).Draw(t, "entries")
	for range n {
		l := &raft.Log{Index: rapid.Uint64().Draw(t, "index"), Term: rapid.Uint64().Draw(t, "eterm"),
			Type: raft.LogType(rapid.IntRange(0, 6).Draw(t, "type")), Data: genBytes(t, "data", 3000),
			Extensions: genBytes(t, "ext", 10)}
		if rapid.Bool().Draw(t, "at") {
			l.AppendedAt = time.Unix(0, rapid.Int64Range(1, 1<<62).Draw(t, "ns"))
		}
		req.Entries = append(req.Entries, l)
	}
	return req
}

// TestAppendCodecRoundTrip: every request the binary layout encodes
// decodes to the same request.
func TestAppendCodecRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		req := genAppend(t)
		got, err := decodeAppend(encodeAppend(req))
		if err != nil {
			t.Fatal(err)
		}
		if !sameAppend(req, got) {
			t.Fatalf("decoded %+v, sent %+v", got, req)
		}
	})
}

func sameAppend(a, b *raft.AppendEntriesRequest) bool {
	if a.ProtocolVersion != b.ProtocolVersion || !bytes.Equal(a.ID, b.ID) || !bytes.Equal(a.Addr, b.Addr) ||
		a.Term != b.Term || a.PrevLogEntry != b.PrevLogEntry || a.PrevLogTerm != b.PrevLogTerm ||
		a.LeaderCommitIndex != b.LeaderCommitIndex || len(a.Entries) != len(b.Entries) {
		return false
	}
	for i, e := range a.Entries {
		g := b.Entries[i]
		if e.Index != g.Index || e.Term != g.Term || e.Type != g.Type || !bytes.Equal(e.Data, g.Data) ||
			!bytes.Equal(e.Extensions, g.Extensions) || !e.AppendedAt.Equal(g.AppendedAt) {
			return false
		}
	}
	return true
}

// TestAppendResponseRoundTrip: responses and error strings come back as
// they were written.
func TestAppendResponseRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		resp := &raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ProtocolVersion: 3, ID: genBytes(t, "id", 10), Addr: genBytes(t, "addr", 20)},
			Term: rapid.Uint64().Draw(t, "term"), LastLog: rapid.Uint64().Draw(t, "last"),
			Success: rapid.Bool().Draw(t, "ok"), NoRetryBackoff: rapid.Bool().Draw(t, "nrb")}
		msg := rapid.String().Draw(t, "err")
		var got raft.AppendEntriesResponse
		gotMsg, err := readAppendResponse(bufio.NewReader(bytes.NewReader(appendAppendResponse(nil, resp, msg))), &got)
		if err != nil {
			t.Fatal(err)
		}
		if gotMsg != msg || got.Term != resp.Term || got.LastLog != resp.LastLog || got.Success != resp.Success ||
			got.NoRetryBackoff != resp.NoRetryBackoff || !bytes.Equal(got.ID, resp.ID) || !bytes.Equal(got.Addr, resp.Addr) {
			t.Fatalf("decoded %+v %q, sent %+v %q", got, gotMsg, resp, msg)
		}
	})
}

// TestAppendDecodeRefusesBadLengths: lengths that disagree with the data,
// or that would make the receiver allocate without bound, are errors.
func TestAppendDecodeRefusesBadLengths(t *testing.T) {
	good := encodeAppend(&raft.AppendEntriesRequest{Term: 1, Entries: []*raft.Log{{Index: 1, Data: []byte("abc")}}})
	counts := 1 + appendFixedLen + 2*2 // type byte, fixed part, two empty fields
	cases := map[string]func(b []byte){
		"too many entries": func(b []byte) { b[counts] = 0xff },
		"huge blob":        func(b []byte) { b[counts+4] = 0x7f },
		"blob larger than the entries": func(b []byte) {
			b[counts+11]++
		},
		"entry longer than the blob": func(b []byte) { b[counts+12+25+3]++ },
	}
	for name, damage := range cases {
		b := bytes.Clone(good)
		damage(b)
		if _, err := decodeAppend(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := decodeAppend(good[:len(good)-1]); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: %v", err)
	}
}

func FuzzReadAppendRequest(f *testing.F) {
	f.Add(encodeAppend(&raft.AppendEntriesRequest{Term: 1}))
	f.Add(encodeAppend(&raft.AppendEntriesRequest{Term: 2, RPCHeader: raft.RPCHeader{ID: []byte("n1"), Addr: []byte("a:1")},
		Entries: []*raft.Log{{Index: 1, Term: 2, Data: []byte("x"), AppendedAt: time.Unix(5, 0)}, {Index: 2, Extensions: []byte{1}}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeAppend(b)
		if err != nil {
			return
		}
		again, err := decodeAppend(encodeAppend(req))
		if err != nil || !sameAppend(req, again) {
			t.Fatalf("re-encoding a decoded request: %v", err)
		}
	})
}

// transportPair is two transports on loopback, b answered by serve.
type transportPair struct {
	a, b *netTransport
	stop chan struct{}
	wg   sync.WaitGroup
	got  chan any // what b's consumer received
}

func newTransportPair(t *testing.T, serve func(rpc raft.RPC)) *transportPair {
	t.Helper()
	log := hclog.NewNullLogger()
	a, err := newTCPTransportForTest("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newTCPTransportForTest("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	p := &transportPair{a: a, b: b, stop: make(chan struct{}), got: make(chan any, 1000)}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			select {
			case rpc := <-b.Consumer():
				p.got <- rpc.Command
				serve(rpc)
			case <-p.stop:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(p.stop)
		p.wg.Wait()
		a.Close()
		b.Close()
	})
	return p
}

// answerAll answers every RPC as a granting, succeeding peer would; an
// AppendEntries whose term is 99 gets an error instead.
func answerAll(rpc raft.RPC) {
	switch req := rpc.Command.(type) {
	case *raft.AppendEntriesRequest:
		if req.Term == 99 {
			rpc.Respond(nil, errors.New("refused for the test"))
			return
		}
		last := req.PrevLogEntry
		if n := len(req.Entries); n > 0 {
			last = req.Entries[n-1].Index
		}
		rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: last, Success: true, NoRetryBackoff: true}, nil)
	case *raft.RequestVoteRequest:
		rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: true}, nil)
	case *raft.RequestPreVoteRequest:
		rpc.Respond(&raft.RequestPreVoteResponse{Term: req.Term, Granted: true}, nil)
	case *raft.TimeoutNowRequest:
		rpc.Respond(&raft.TimeoutNowResponse{}, nil)
	case *raft.InstallSnapshotRequest:
		n, err := io.Copy(io.Discard, rpc.Reader)
		rpc.Respond(&raft.InstallSnapshotResponse{Term: req.Term, Success: err == nil && n == req.Size}, nil)
	}
}

func entriesOf(n, size int, first uint64) []*raft.Log {
	out := make([]*raft.Log, n)
	for i := range out {
		d := bytes.Repeat([]byte{byte(i)}, size)
		out[i] = &raft.Log{Index: first + uint64(i), Term: 3, Type: raft.LogCommand, Data: d, AppendedAt: time.Now()}
	}
	return out
}

// TestTransportRPCs: every raft RPC crosses real TCP and comes back
// answered; AppendEntries carries its entries intact both below and above
// the size at which the data is written from the entries' own slices; an
// error answer is an error and leaves the connection usable.
func TestTransportRPCs(t *testing.T) {
	p := newTransportPair(t, answerAll)
	target := p.b.LocalAddr()
	for _, c := range []struct{ n, size int }{{0, 0}, {3, 100}, {64, 1024}, {1, 64 << 10}} {
		req := &raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 9, PrevLogTerm: 2, LeaderCommitIndex: 8,
			RPCHeader: raft.RPCHeader{ID: []byte("a"), Addr: []byte(p.a.LocalAddr())}, Entries: entriesOf(c.n, c.size, 10)}
		var resp raft.AppendEntriesResponse
		if err := p.a.AppendEntries("b", target, req, &resp); err != nil {
			t.Fatalf("%d × %d B: %v", c.n, c.size, err)
		}
		if got := (<-p.got).(*raft.AppendEntriesRequest); !sameAppend(req, got) {
			t.Fatalf("%d × %d B: the peer received a different request", c.n, c.size)
		}
		if want := req.PrevLogEntry + uint64(c.n); !resp.Success || !resp.NoRetryBackoff || resp.LastLog != want || resp.Term != 3 {
			t.Fatalf("%d × %d B: response %+v", c.n, c.size, resp)
		}
	}
	var resp raft.AppendEntriesResponse
	if err := p.a.AppendEntries("b", target, &raft.AppendEntriesRequest{Term: 99}, &resp); err == nil || err.Error() != "refused for the test" {
		t.Fatalf("error answer: %v", err)
	}
	<-p.got
	var vote raft.RequestVoteResponse
	if err := p.a.RequestVote("b", target, &raft.RequestVoteRequest{Term: 4}, &vote); err != nil || !vote.Granted || vote.Term != 4 {
		t.Fatalf("vote: %v %+v", err, vote)
	}
	var pre raft.RequestPreVoteResponse
	if err := p.a.RequestPreVote("b", target, &raft.RequestPreVoteRequest{Term: 5}, &pre); err != nil || !pre.Granted {
		t.Fatalf("pre-vote: %v %+v", err, pre)
	}
	var tn raft.TimeoutNowResponse
	if err := p.a.TimeoutNow("b", target, &raft.TimeoutNowRequest{}, &tn); err != nil {
		t.Fatalf("timeout now: %v", err)
	}
	p.a.poolMu.Lock()
	pooled := len(p.a.pool[target])
	p.a.poolMu.Unlock()
	if pooled != 1 {
		t.Fatalf("%d pooled connections after sequential RPCs and an error answer, want 1", pooled)
	}
	snap := bytes.Repeat([]byte("s"), 1<<20)
	var ir raft.InstallSnapshotResponse
	if err := p.a.InstallSnapshot("b", target, &raft.InstallSnapshotRequest{Term: 6, Size: int64(len(snap))}, &ir, bytes.NewReader(snap)); err != nil || !ir.Success {
		t.Fatalf("install snapshot: %v %+v", err, ir)
	}
}

// TestTransportPipeline: pipelined AppendEntries are answered in the order
// they were sent, each with its own response.
func TestTransportPipeline(t *testing.T) {
	p := newTransportPair(t, answerAll)
	pl, err := p.a.AppendEntriesPipeline("b", p.b.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	const n = 200
	sendErr := make(chan error, 1)
	go func() {
		for i := range n {
			req := &raft.AppendEntriesRequest{Term: 3, PrevLogEntry: uint64(i * 4), Entries: entriesOf(4, 8<<10, uint64(i*4+1))}
			if _, err := pl.AppendEntries(req, &raft.AppendEntriesResponse{}); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- nil
	}()
	i := 0
	for f := range pl.Consumer() {
		if err := f.Error(); err != nil {
			t.Fatalf("future %d: %v", i, err)
		}
		if want := uint64(i*4 + 4); f.Response().LastLog != want || f.Request().PrevLogEntry != uint64(i*4) {
			t.Fatalf("future %d answered with last log %d, want %d", i, f.Response().LastLog, want)
		}
		if i++; i == n {
			break
		}
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
}

// TestTransportHeartbeatFastPath: a heartbeat goes to the heartbeat
// handler, not through the consumer.
func TestTransportHeartbeatFastPath(t *testing.T) {
	p := newTransportPair(t, answerAll)
	beats := make(chan struct{}, 1)
	p.b.SetHeartbeatHandler(func(rpc raft.RPC) {
		beats <- struct{}{}
		rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
	})
	var resp raft.AppendEntriesResponse
	req := &raft.AppendEntriesRequest{Term: 7, RPCHeader: raft.RPCHeader{Addr: []byte("a:1")}}
	if err := p.a.AppendEntries("b", p.b.LocalAddr(), req, &resp); err != nil || !resp.Success {
		t.Fatalf("heartbeat: %v %+v", err, resp)
	}
	select {
	case <-beats:
	default:
		t.Fatal("the heartbeat handler was not called")
	}
	if len(p.got) != 0 {
		t.Fatal("the heartbeat went through the consumer")
	}
}

// TestTransportServesMsgpackAppend: a node still running raft's
// NetworkTransport (an older raftmq) replicates to this one.
func TestTransportServesMsgpackAppend(t *testing.T) {
	p := newTransportPair(t, answerAll)
	old, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 1, 10*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { old.CloseStreams(); old.Close() }()
	req := &raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 1, Entries: entriesOf(2, 500, 2)}
	var resp raft.AppendEntriesResponse
	if err := old.AppendEntries("b", p.b.LocalAddr(), req, &resp); err != nil {
		t.Fatal(err)
	}
	if got := (<-p.got).(*raft.AppendEntriesRequest); len(got.Entries) != 2 || !bytes.Equal(got.Entries[1].Data, req.Entries[1].Data) {
		t.Fatal("the msgpack request arrived altered")
	}
	if !resp.Success || resp.LastLog != 3 {
		t.Fatalf("response %+v", resp)
	}
	var vote raft.RequestVoteResponse
	if err := old.RequestVote("b", p.b.LocalAddr(), &raft.RequestVoteRequest{Term: 4}, &vote); err != nil || !vote.Granted {
		t.Fatalf("vote from the old transport: %v %+v", err, vote)
	}
}

// BenchmarkTransportAppend: one AppendEntries round trip over loopback
// through raft's msgpack NetworkTransport and through this transport, the
// peer answering at once: 64 entries of 1 KiB (a group commit of small
// messages) and one of 64 KiB.
func BenchmarkTransportAppend(b *testing.B) {
	log := hclog.NewNullLogger()
	newMsgpack := func() (raft.Transport, func()) {
		tr, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 3, 10*time.Second, log)
		if err != nil {
			b.Fatal(err)
		}
		return tr, func() { tr.CloseStreams(); tr.Close() }
	}
	newBinary := func() (raft.Transport, func()) {
		tr, err := newTCPTransportForTest("127.0.0.1:0", log)
		if err != nil {
			b.Fatal(err)
		}
		return tr, func() { tr.Close() }
	}
	for _, kind := range []struct {
		name string
		make func() (raft.Transport, func())
	}{{"msgpack", newMsgpack}, {"binary", newBinary}} {
		for _, shape := range []struct{ n, size int }{{64, 1024}, {1, 64 << 10}} {
			b.Run(fmt.Sprintf("%s/%dx%d", kind.name, shape.n, shape.size), func(b *testing.B) {
				benchAppend(b, kind.make, shape.n, shape.size)
			})
		}
	}
}

func benchAppend(b *testing.B, mk func() (raft.Transport, func()), n, size int) {
	a, closeA := mk()
	defer closeA()
	peer, closePeer := mk()
	defer closePeer()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case rpc := <-peer.Consumer():
				answerAll(rpc)
			case <-stop:
				return
			}
		}
	}()
	req := &raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 1, Entries: entriesOf(n, size, 2)}
	b.SetBytes(int64(n * size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var resp raft.AppendEntriesResponse
		if err := a.AppendEntries("p", peer.LocalAddr(), req, &resp); err != nil || !resp.Success {
			b.Fatal(err)
		}
	}
}
