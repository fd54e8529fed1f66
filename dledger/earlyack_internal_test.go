package dledger

import (
	"testing"

	"github.com/hashicorp/raft"
)

// testAcker is an earlyAcker without a node: tables and channels only.
func testAcker() *earlyAcker {
	return &earlyAcker{byData: map[*byte]*tracked{}, pending: make(chan *tracked, 8), done: make(chan struct{})}
}

func trackedPut(a *earlyAcker, ep *epoch, data []byte) *tracked {
	inf := &inflight{batch: []*proposal{{cmd: &PutMessagesCommand{EarlyAck: true}}}}
	return a.track(ep, data, inf)
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestEarlyAckCountsOnlyVotersInTheEntrysTerm: an answer counts toward an
// entry's majority only from a voting follower, for a request that carried
// the entry in the term it was built in, and once per follower.
func TestEarlyAckCountsOnlyVotersInTheEntrysTerm(t *testing.T) {
	a := testAcker()
	ep := &epoch{term: 5, voters: map[raft.ServerAddress]bool{"f1": true, "f2": true}, quorum: 2, fetched: true}
	data := []byte("entry")
	tr := trackedPut(a, ep, data)
	if tr == nil {
		t.Fatal("an eligible put was not tracked")
	}
	ok := &raft.AppendEntriesResponse{Term: 5, Success: true}
	req := func(term uint64) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{Term: 5, Entries: []*raft.Log{{Index: 9, Term: term, Data: data}}}
	}
	a.onAppended("learner", req(5), ok)                                                                                           // not a voter
	a.onAppended("f1", req(4), ok)                                                                                                // the entry in another term
	a.onAppended("f1", req(5), &raft.AppendEntriesResponse{Term: 5})                                                              // refused
	a.onAppended("f1", req(5), &raft.AppendEntriesResponse{Term: 6, Success: true})                                               // answered in a later term
	a.onAppended("f1", &raft.AppendEntriesRequest{Term: 5, Entries: []*raft.Log{{Index: 9, Term: 5, Data: []byte("entry")}}}, ok) // a copy, not the proposer's buffer
	if closed(tr.half) {
		t.Fatal("an answer that must not count made the entry half-acknowledged")
	}
	a.onAppended("f1", req(5), ok)
	a.onAppended("f1", req(5), ok) // the same follower again
	if !closed(tr.half) || closed(tr.full) {
		t.Fatalf("after one voter's answer: half %v full %v, want true false", closed(tr.half), closed(tr.full))
	}
	if tr.index != 9 {
		t.Fatalf("index %d, want 9", tr.index)
	}
	a.onAppended("f2", req(5), ok)
	if !closed(tr.full) {
		t.Fatal("both voting followers answered: the entry is on a majority without the leader")
	}
}

// TestEarlyAckNotTracked: side commands, a put that did not ask, a
// membership change under way or finished since the voter set was read,
// and a node that is no voter leave entries to raft's own answer.
func TestEarlyAckNotTracked(t *testing.T) {
	a := testAcker()
	voters := map[raft.ServerAddress]bool{"f1": true, "f2": true}
	ep := &epoch{term: 5, voters: voters, quorum: 2, fetched: true}
	side := &inflight{batch: []*proposal{{cmd: &PutMessagesCommand{EarlyAck: true}, with: [][]byte{{1}}}}}
	if a.track(ep, []byte("x"), side) != nil {
		t.Error("a put with side commands was tracked")
	}
	plain := &inflight{batch: []*proposal{{cmd: &PutMessagesCommand{}}}}
	if a.track(ep, []byte("y"), plain) != nil {
		t.Error("a put that did not ask for it was tracked")
	}
	a.members.Add(1) // a change starts
	if trackedPut(a, ep, []byte("z")) != nil {
		t.Error("tracked against a voter set read before a membership change")
	}
	a.members.Add(1) // and ends
	if trackedPut(a, ep, []byte("w")) != nil {
		t.Error("tracked against a voter set read before a membership change ended")
	}
	if trackedPut(a, &epoch{term: 5, fetched: true, members: 2}, []byte("v")) != nil {
		t.Error("tracked on a node that is no voter (no voter set)")
	}
	if trackedPut(a, &epoch{term: 5, voters: voters, quorum: 2, fetched: true, members: 2}, []byte("u")) == nil {
		t.Error("an eligible put under the current voter set was not tracked")
	}
}
