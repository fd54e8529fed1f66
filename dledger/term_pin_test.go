package dledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/dledger/dledgertest"
)

// A put pinned to another term is refused before it is appended; one
// pinned to the current term commits with its delay progress.
func TestPutPinnedToTerm(t *testing.T) {
	c := dledgertest.New(t, dledgertest.Options{Configure: fastConfig})
	n := c.Node(c.WaitLeader(5 * time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Establish the term's epoch first so the term below is the leader's.
	if _, err := n.Propose(ctx, &dledger.PutMessagesCommand{Messages: []dledger.Message{{Topic: "t", Record: record(t, "t", 0, []byte("a"))}}}); err != nil {
		t.Fatal(err)
	}
	term := n.Raft().CurrentTerm()
	progress := []dledger.Command{&dledgertest.SetCommand{Key: "delay/1", Value: "7"}}
	stale := &dledger.PutMessagesCommand{Term: term - 1, With: progress,
		Messages: []dledger.Message{{Topic: "t", Record: record(t, "t", 0, []byte("b"))}}}
	if _, err := n.Propose(ctx, stale); !errors.Is(err, dledger.ErrStaleProposal) {
		t.Fatalf("stale-term put: err %v, want ErrStaleProposal", err)
	}
	if got := n.QueueMaxOffset(dledger.QueueKey{Topic: "t"}); got != 1 {
		t.Fatalf("queue max offset %d after the refused put, want 1", got)
	}
	if _, found := c.Member(c.WaitLeader(time.Second)).SM.Get("delay/1"); found {
		t.Fatal("the refused put's side command was applied")
	}
	ok := &dledger.PutMessagesCommand{Term: term, With: progress,
		Messages: []dledger.Message{{Topic: "t", Record: record(t, "t", 0, []byte("c"))}}}
	if _, err := n.Propose(ctx, ok); err != nil {
		t.Fatalf("current-term put: %v", err)
	}
	if v, found := c.Member(c.WaitLeader(time.Second)).SM.Get("delay/1"); !found || v != "7" {
		t.Fatalf("delay progress %q (%v), want 7", v, found)
	}
}
