package dledger

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// scriptedTransport answers AppendEntries per target: an error (the
// follower cannot be reached), a refusal (it could not store the
// entries), or success through the request's last entry.
type scriptedTransport struct {
	raft.Transport
	mu     sync.Mutex
	answer map[raft.ServerAddress]string // "down", "refuse", "ok"
}

func (s *scriptedTransport) set(addr raft.ServerAddress, a string) {
	s.mu.Lock()
	s.answer[addr] = a
	s.mu.Unlock()
}

func (s *scriptedTransport) AppendEntries(_ raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	s.mu.Lock()
	a := s.answer[target]
	s.mu.Unlock()
	switch a {
	case "down":
		return errors.New("connection refused")
	case "refuse":
		*resp = raft.AppendEntriesResponse{Term: req.Term, Success: false, LastLog: 1}
		return nil
	}
	*resp = raft.AppendEntriesResponse{Term: req.Term, Success: true}
	if n := len(req.Entries); n > 0 {
		resp.LastLog = req.Entries[n-1].Index
	}
	return nil
}

// TestTransferTargetSkipsUnreachableAndRefusingFollowers: the transfer
// target is the most caught-up voter among those that answered recently
// and take entries; a follower that never answered, one that stopped
// answering, one whose disk refuses entries and a non-voter are passed
// over, and none qualifying leaves the pick to raft.
func TestTransferTargetSkipsUnreachableAndRefusingFollowers(t *testing.T) {
	st := &scriptedTransport{answer: map[raft.ServerAddress]string{"a1": "down", "a2": "ok", "a3": "refuse", "a4": "ok"}}
	_, p := newProgressTransport(st, nil, func() bool { return true })
	clock := time.Unix(1000, 0)
	p.now = func() time.Time { return clock }
	voters := []raft.Server{
		{ID: "n0", Address: "a0", Suffrage: raft.Voter},
		{ID: "n1", Address: "a1", Suffrage: raft.Voter},
		{ID: "n2", Address: "a2", Suffrage: raft.Voter},
		{ID: "n3", Address: "a3", Suffrage: raft.Voter},
		{ID: "n4", Address: "a4", Suffrage: raft.Nonvoter},
	}
	heartbeat := func(addr raft.ServerAddress) {
		_ = p.AppendEntries("", addr, &raft.AppendEntriesRequest{Term: 2}, &raft.AppendEntriesResponse{})
	}
	appendTo := func(addr raft.ServerAddress, last uint64) {
		req := &raft.AppendEntriesRequest{Term: 2, PrevLogEntry: last - 1, PrevLogTerm: 2, LeaderCommitIndex: last - 1,
			Entries: []*raft.Log{{Index: last, Term: 2, Type: raft.LogCommand}}}
		_ = p.AppendEntries("", addr, req, &raft.AppendEntriesResponse{})
	}
	target := func(recent time.Duration) string {
		s, ok := p.TransferTarget(voters, "n0", recent)
		if !ok {
			return ""
		}
		return string(s.ID)
	}

	if got := target(time.Hour); got != "" {
		t.Fatalf("before any answer: target %q, want none", got)
	}
	for _, a := range []raft.ServerAddress{"a1", "a2", "a3", "a4"} {
		heartbeat(a)
		appendTo(a, 10)
	}
	// n1 never answered, n3 refuses entries, n4 does not vote.
	if got := target(time.Hour); got != "n2" {
		t.Fatalf("target %q, want n2", got)
	}
	// n3's disk has space again and it is further along than n2 (heard
	// from last).
	st.set("a3", "ok")
	appendTo("a3", 12)
	heartbeat("a2")
	if got := target(time.Hour); got != "n3" {
		t.Fatalf("target %q, want n3 (the most caught up)", got)
	}
	// n3's disk fills again: n2, though n3 holds more.
	st.set("a3", "refuse")
	appendTo("a3", 13)
	if got := target(time.Hour); got != "n2" {
		t.Fatalf("target %q, want n2 (n3 refuses entries)", got)
	}
	st.set("a3", "ok")
	appendTo("a3", 13)
	// n3 goes down: once its last answer is older than recent, n2 is the
	// pick.
	st.set("a3", "down")
	heartbeat("a3")
	clock = clock.Add(20 * time.Millisecond)
	heartbeat("a2")
	if got := target(10 * time.Millisecond); got != "n2" {
		t.Fatalf("target %q, want n2 (n3 silent for 20 ms)", got)
	}
	clock = clock.Add(20 * time.Millisecond)
	if got := target(10 * time.Millisecond); got != "" {
		t.Fatalf("with no follower heard for 20 ms: target %q, want none", got)
	}
}
