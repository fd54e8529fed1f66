package dledger

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestVoteGuardFullLogDoesNotCampaign: while its log refuses writes for
// lack of space a node sends no vote or pre-vote requests and refuses
// TimeoutNow, but still answers vote requests (it may vote for others).
// In a container run a full former leader, its log as long as any, won
// four elections in 1.4 s, failing each time to store its first entry.
func TestVoteGuardFullLogDoesNotCampaign(t *testing.T) {
	aAddr, a := raft.NewInmemTransport("a")
	bAddr, b := raft.NewInmemTransport("b")
	a.Connect(bAddr, b)
	b.Connect(aAddr, a)
	var full atomic.Bool
	gt, g := newVoteGuard(a, func() bool { return false }, full.Load, "a", hclog.NewNullLogger())
	defer g.stopPump()

	full.Store(true)
	if err := gt.RequestVote("b", bAddr, &raft.RequestVoteRequest{}, &raft.RequestVoteResponse{}); !errors.Is(err, errNoSpace) {
		t.Fatalf("RequestVote sent while full: %v", err)
	}
	if err := gt.(raft.WithPreVote).RequestPreVote("b", bAddr, &raft.RequestPreVoteRequest{}, &raft.RequestPreVoteResponse{}); !errors.Is(err, errNoSpace) {
		t.Fatalf("RequestPreVote sent while full: %v", err)
	}
	if err := b.TimeoutNow("a", aAddr, &raft.TimeoutNowRequest{}, &raft.TimeoutNowResponse{}); err == nil || err.Error() != errNoSpace.Error() {
		t.Fatalf("TimeoutNow taken while full: %v", err)
	}
	// Votes asked of it still reach raft.
	go func() {
		select {
		case rpc := <-gt.Consumer():
			rpc.Respond(&raft.RequestVoteResponse{Granted: true}, nil)
		case <-time.After(5 * time.Second):
		}
	}()
	var resp raft.RequestVoteResponse
	if err := b.RequestVote("a", aAddr, &raft.RequestVoteRequest{Term: 2}, &resp); err != nil || !resp.Granted {
		t.Fatalf("vote request to a full node: %+v, %v", resp, err)
	}

	full.Store(false)
	go func() {
		select {
		case rpc := <-b.Consumer():
			rpc.Respond(&raft.RequestVoteResponse{Granted: true}, nil)
		case <-time.After(5 * time.Second):
		}
	}()
	if err := gt.RequestVote("b", bAddr, &raft.RequestVoteRequest{Term: 3}, &raft.RequestVoteResponse{}); err != nil {
		t.Fatalf("RequestVote once space is back: %v", err)
	}
}
