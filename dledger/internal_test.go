package dledger

import (
	"reflect"
	"testing"
)

func TestQueueRunsGroup(t *testing.T) {
	msg := func(topic string, q int32, qo, co int64) AppliedMessage {
		return AppliedMessage{Topic: topic, QueueID: q, QueueOffset: qo, CommitOffset: co, Size: 10, TagsCode: co}
	}
	ent := func(co int64) QueueEntry { return QueueEntry{CommitOffset: co, Size: 10, TagsCode: co} }
	var g queueRuns
	got := g.group([]AppliedMessage{
		msg("a", 1, 5, 100), msg("b", 0, 0, 110), msg("a", 1, 6, 120), msg("a", 2, 9, 130), msg("b", 0, 1, 140), msg("a", 1, 7, 150),
	})
	want := []queueRun{
		{QueueKey{"a", 1}, 5, []QueueEntry{ent(100), ent(120), ent(150)}},
		{QueueKey{"b", 0}, 0, []QueueEntry{ent(110), ent(140)}},
		{QueueKey{"a", 2}, 9, []QueueEntry{ent(130)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("group = %+v\nwant %+v", got, want)
	}
	// Reused for the next entry: nothing of the previous one remains.
	got = g.group([]AppliedMessage{msg("c", 3, 0, 200)})
	want = []queueRun{{QueueKey{"c", 3}, 0, []QueueEntry{ent(200)}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("second group = %+v, want %+v", got, want)
	}
}

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
