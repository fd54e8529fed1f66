package client

import (
	"testing"
	"time"

	"github.com/raftmq/raftmq/message"
)

func testQueues() []MessageQueue {
	var qs []MessageQueue
	for _, b := range []string{"a", "b"} {
		for i := range int32(2) {
			qs = append(qs, MessageQueue{Topic: "t", BrokerName: b, QueueID: i})
		}
	}
	return qs
}

// TestFaultSelector: a failed or slow group is skipped while isolated,
// used again afterwards, and used anyway when it is the only one.
func TestFaultSelector(t *testing.T) {
	now := time.Unix(1000, 0)
	f := newFaultSelector(true)
	f.now = func() time.Time { return now }
	qs := testQueues()
	f.record("a", 0, true)
	for range 8 {
		if q := f.Select(nil, qs, ""); q.BrokerName != "b" {
			t.Fatalf("isolated group a selected: %v", q)
		}
	}
	now = now.Add(failureIsolated + time.Millisecond)
	seen := map[string]bool{}
	for range 4 {
		seen[f.Select(nil, qs, "").BrokerName] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("after isolation both groups should serve, saw %v", seen)
	}
	f.record("b", 600*time.Millisecond, false) // slow: 30 s
	if q := f.Select(nil, qs, "a"); q.BrokerName != "b" {
		t.Fatalf("with b slow and a the group just failed, want b (slow beats failed), got %v", q)
	}
	if q := f.Select(nil, qs[2:], ""); q.BrokerName != "b" {
		t.Fatalf("only group b: got %v", q)
	}
	for range 4 {
		if q := f.Select(nil, qs, ""); q.BrokerName != "a" {
			t.Fatalf("slow group b selected: %v", q)
		}
	}
}

// TestRoundRobinAndHash: round robin avoids the last failed group; hash
// is stable per key.
func TestRoundRobinAndHash(t *testing.T) {
	qs := testQueues()
	rr := RoundRobinSelector()
	for range 8 {
		if q := rr.Select(nil, qs, "a"); q.BrokerName == "a" {
			t.Fatalf("round robin retried on the failed group: %v", q)
		}
	}
	h := HashSelector(func(m *message.Message) string { return string(m.Body) })
	first := h.Select(newMsg("t", "key-1"), qs, "")
	for range 4 {
		if q := h.Select(newMsg("t", "key-1"), qs, "a"); q != first {
			t.Fatalf("hash moved key-1 from %v to %v", first, q)
		}
	}
}
