package store

import (
	"reflect"
	"testing"

	"github.com/raftmq/raftmq/dledger"
)

func TestQueueRunsGroup(t *testing.T) {
	msg := func(topic string, q int32, qo, co int64) dledger.AppliedMessage {
		return dledger.AppliedMessage{Topic: topic, QueueID: q, QueueOffset: qo, CommitOffset: co, Size: 10, TagsCode: co}
	}
	ent := func(co int64) Entry { return Entry{CommitOffset: co, Size: 10, TagsCode: co} }
	var g queueRuns
	got := g.group([]dledger.AppliedMessage{
		msg("a", 1, 5, 100), msg("b", 0, 0, 110), msg("a", 1, 6, 120), msg("a", 2, 9, 130), msg("b", 0, 1, 140), msg("a", 1, 7, 150),
	})
	want := []queueRun{
		{dledger.QueueKey{Topic: "a", QueueID: 1}, 5, []Entry{ent(100), ent(120), ent(150)}},
		{dledger.QueueKey{Topic: "b", QueueID: 0}, 0, []Entry{ent(110), ent(140)}},
		{dledger.QueueKey{Topic: "a", QueueID: 2}, 9, []Entry{ent(130)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("group = %+v\nwant %+v", got, want)
	}
	// Reused for the next entry: nothing of the previous one remains.
	got = g.group([]dledger.AppliedMessage{msg("c", 3, 0, 200)})
	want = []queueRun{{dledger.QueueKey{Topic: "c", QueueID: 3}, 0, []Entry{ent(200)}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("second group = %+v, want %+v", got, want)
	}
}

func TestNotifierWakesOnce(t *testing.T) {
	n := notifier{ch: map[dledger.QueueKey]chan struct{}{}}
	k := dledger.QueueKey{Topic: "t"}
	w1, w2 := n.wait(k), n.wait(k)
	if w1 != w2 {
		t.Fatal("two waiters of one queue got different channels")
	}
	n.notify(dledger.QueueKey{Topic: "other"})
	select {
	case <-w1:
		t.Fatal("woken by another queue's notify")
	default:
	}
	n.notify(k)
	<-w1
	if w3 := n.wait(k); w3 == w1 {
		t.Fatal("a new waiter got the closed channel")
	}
}
