package dledger

import (
	"bytes"
	"errors"
	"io"
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

func (s *counters) max(k QueueKey) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.queueNext[k]
}

func TestFSMChecksOffsets(t *testing.T) {
	fatal := make(chan error, 1)
	f := &fsm{st: newCounters(), log: hclog.NewNullLogger(), onFatal: func(err error) { fatal <- err }}
	ok := putLog(t, 1, 2, 2, AppliedMessage{Topic: "t", QueueOffset: 0, CommitOffset: 0, Size: 10},
		AppliedMessage{Topic: "t", QueueOffset: 1, CommitOffset: 10, Size: 5})
	if r := f.Apply(ok); r != nil {
		t.Fatalf("valid put: %v", r)
	}
	if got := f.st.max(QueueKey{"t", 0}); got != 2 {
		t.Fatalf("queue max %d, want 2", got)
	}
	// Proposed with counters of term 2 but appended in term 3: rejected the
	// same way on every node, nothing changes, the node keeps running.
	stale := putLog(t, 2, 3, 2, AppliedMessage{Topic: "t", QueueOffset: 0, CommitOffset: 0, Size: 10})
	if r, _ := f.Apply(stale).(error); !errors.Is(r, ErrStaleProposal) {
		t.Fatalf("stale put: %v", r)
	}
	if f.st.commitNext != 15 || f.st.applied != 2 {
		t.Fatalf("stale put: commit offset %d (want 15), applied %d (want 2)", f.st.commitNext, f.st.applied)
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
	if f.st.commitNext != 15 {
		t.Fatalf("applied after failure: commit offset %d", f.st.commitNext)
	}
}

// failingSM refuses every command, as a state machine that cannot decode
// one must.
type failingSM struct{ StateMachine }

func (failingSM) Apply(uint64, CommandType, []byte) error { return errors.New("cannot decode") }

func TestFSMStopsOnUnknownCommand(t *testing.T) {
	fatal := make(chan error, 1)
	f := &fsm{st: newCounters(), log: hclog.NewNullLogger(), onFatal: func(err error) { fatal <- err }}
	r, _ := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte{1, 99, 0, 0}}).(error)
	if !errors.Is(r, ErrUnknownCommand) || !errors.Is(<-fatal, ErrDivergence) {
		t.Fatalf("unknown version: %v", r)
	}
	// A type the state machine cannot apply stops the node too.
	f = &fsm{st: newCounters(), sm: failingSM{}, log: hclog.NewNullLogger(), onFatal: func(err error) { fatal <- err }}
	r, _ = f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte{CommandVersion, 99, 0, 0}}).(error)
	if !errors.Is(r, ErrDivergence) || !errors.Is(<-fatal, ErrDivergence) || f.st.applied != 0 {
		t.Fatalf("unappliable command: %v, applied %d", r, f.st.applied)
	}
	// With no state machine at all, likewise.
	f = &fsm{st: newCounters(), log: hclog.NewNullLogger(), onFatal: func(err error) { fatal <- err }}
	r, _ = f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte{CommandVersion, 3, 0, 0}}).(error)
	if !errors.Is(r, ErrDivergence) || !errors.Is(<-fatal, ErrDivergence) {
		t.Fatalf("command without a state machine: %v", r)
	}
}

// fakeBehindLog records DiscardIfBehind calls (the commitlog's own test
// covers what the call does).
type fakeBehindLog struct {
	raft.LogStore
	asked []uint64
}

func (l *fakeBehindLog) DiscardIfBehind(index uint64) (bool, error) {
	l.asked = append(l.asked, index)
	return true, nil
}

// TestRestoreDiscardsLogBehindSnapshot: restoring a snapshot first drops
// a log left entirely behind it (an install whose log reset failed, or a
// crash between the install and the reset), so later appends can follow
// the snapshot.
func TestRestoreDiscardsLogBehindSnapshot(t *testing.T) {
	logs := &fakeBehindLog{}
	f := &fsm{st: newCounters(), logs: logs, log: hclog.NewNullLogger(), onFatal: func(error) {}}
	c := newCounters()
	c.applied = 50
	if err := f.Restore(io.NopCloser(bytes.NewReader(encodeSnapshot(c, nil)))); err != nil {
		t.Fatal(err)
	}
	if len(logs.asked) != 1 || logs.asked[0] != 50 {
		t.Fatalf("DiscardIfBehind asked %v, want [50]", logs.asked)
	}
}
