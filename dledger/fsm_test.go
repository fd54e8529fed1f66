package dledger

import (
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func putLog(t *testing.T, index, logTerm, propTerm uint64, msgs ...AppliedMessage) *raft.Log {
	t.Helper()
	recs := make([][]byte, len(msgs))
	for i := range msgs {
		recs[i] = make([]byte, msgs[i].Size)
	}
	b, err := encodePut(propTerm, msgs, nil, recs)
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: index, Term: logTerm, Type: raft.LogCommand, Data: b}
}

func TestFSMChecksOffsets(t *testing.T) {
	fatal := make(chan error, 1)
	f := &fsm{st: newState(), log: hclog.NewNullLogger(), onFatal: func(err error) { fatal <- err }}
	ok := putLog(t, 1, 2, 2, AppliedMessage{Topic: "t", QueueOffset: 0, CommitOffset: 0, Size: 10},
		AppliedMessage{Topic: "t", QueueOffset: 1, CommitOffset: 10, Size: 5})
	if r := f.Apply(ok); r != nil {
		t.Fatalf("valid put: %v", r)
	}
	if got := (Metadata{f.st}).QueueMaxOffset(QueueKey{"t", 0}); got != 2 {
		t.Fatalf("queue max %d, want 2", got)
	}
	// Proposed with counters of term 2 but appended in term 3: rejected the
	// same way on every node, nothing changes, the node keeps running.
	stale := putLog(t, 2, 3, 2, AppliedMessage{Topic: "t", QueueOffset: 0, CommitOffset: 0, Size: 10})
	if r, _ := f.Apply(stale).(error); !errors.Is(r, ErrStaleProposal) {
		t.Fatalf("stale put: %v", r)
	}
	if got := (Metadata{f.st}).MaxCommitOffset(); got != 15 {
		t.Fatalf("stale put changed commit offset to %d", got)
	}
	// Same term, wrong queue offset: divergence, the node stops.
	bad := putLog(t, 3, 3, 3, AppliedMessage{Topic: "t", QueueOffset: 5, CommitOffset: 15, Size: 1})
	if r, _ := f.Apply(bad).(error); !errors.Is(r, ErrDivergence) {
		t.Fatalf("divergent put: %v", r)
	}
	if err := <-fatal; !errors.Is(err, ErrDivergence) {
		t.Fatalf("onFatal got %v", err)
	}
	// Once failed, nothing more is applied.
	next := putLog(t, 4, 3, 3, AppliedMessage{Topic: "t", QueueOffset: 2, CommitOffset: 15, Size: 1})
	if r, _ := f.Apply(next).(error); !errors.Is(r, ErrDivergence) {
		t.Fatalf("apply after failure: %v", r)
	}
	if got := (Metadata{f.st}).MaxCommitOffset(); got != 15 {
		t.Fatalf("applied after failure: commit offset %d", got)
	}
}

func TestFSMStopsOnUnknownCommand(t *testing.T) {
	fatal := make(chan error, 1)
	f := &fsm{st: newState(), log: hclog.NewNullLogger(), onFatal: func(err error) { fatal <- err }}
	r, _ := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte{CommandVersion, 99, 0, 0}}).(error)
	if !errors.Is(r, ErrUnknownCommand) || !errors.Is(<-fatal, ErrDivergence) {
		t.Fatalf("unknown command: %v", r)
	}
}
