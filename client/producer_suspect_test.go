package client

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/remoting"
)

// TestProducerDoesNotReturnToSilentLeader: the leader stops answering (a
// paused or cut-off process) and the other node answers "no leader right
// now" twice while the group elects, then stores the send. The node that
// answered is alive and is asked again soon; the silent leader is not
// tried a second time within the send (which, suspected like the answering
// node for 2 s, it was: its suspicion expired first and the send waited
// out a second attempt timeout on it).
func TestProducerDoesNotReturnToSilentLeader(t *testing.T) {
	f := startTxFake(t, 2)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var silent atomic.Int32
	f.nodes[0].srv.HandleFunc(remoting.ReqSendMessageV2, func(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		silent.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return remoting.NewResponse(req, remoting.ResSystemError, "too late")
	})
	f.nodes[1].script([]int16{remoting.ResServiceNotAvailable, remoting.ResServiceNotAvailable}, nil)
	p, err := NewProducer("pg-suspect", WithNameServers(f.ns.addr), WithLogger(testLogger(t)), WithSendTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 10*time.Second)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	start := time.Now()
	res, err := p.Send(ctx, newMsg("T", "x"))
	if err != nil {
		t.Fatalf("send after %v: %v", time.Since(start), err)
	}
	if n := silent.Load(); n != 1 {
		t.Errorf("the silent leader got %d attempts, want 1 (then only the answering node)", n)
	}
	if got := len(f.nodes[1].sent()); got != 3 || res.Attempts != 4 {
		t.Errorf("the answering node got %d sends (want 3), %d attempts in all (want 4)", got, res.Attempts)
	}
	t.Logf("stored after %v, %d attempts", time.Since(start), res.Attempts)
}
