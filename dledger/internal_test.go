package dledger

import "testing"

func TestProposerExpected(t *testing.T) {
	p := &proposer{}
	batch := []*proposal{{seq: 3}, {seq: 5}, {seq: 9}, {seq: 12}}
	if got := p.expected(batch); got != 0 {
		t.Fatalf("before any completion: expected %d, want 0", got)
	}
	// The last entry answered 8 callers when seq was at 10: proposals 3, 5
	// and 9 were waiting already, 12 is one of the 8 coming back.
	p.last.Store(&completion{answered: 8, seq: 10})
	if got := p.expected(batch); got != 11 {
		t.Fatalf("expected %d, want 8 answered + 3 waiting = 11", got)
	}
}
