package broker

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
)

// TestOffsetRetryMarks: a value that failed to commit comes back marked
// as a retry, unless the consumer reported a newer one meanwhile.
func TestOffsetRetryMarks(t *testing.T) {
	o := newOffsetCommitter(nil, meta.NewState(), 0, hclog.NewNullLogger())
	a, b := meta.OffsetKey{Group: "g", Topic: "t", QueueID: 0}, meta.OffsetKey{Group: "g", Topic: "t", QueueID: 1}
	o.update(a, 5)
	o.update(b, 6)
	failed := o.take()
	if len(failed) != 2 || failed[0].retry || failed[1].retry {
		t.Fatalf("fresh values taken as %+v", failed)
	}
	o.update(b, 9) // newer than the failed 6
	o.requeue(failed)
	got := map[meta.OffsetKey]pendingOffset{}
	for _, p := range o.take() {
		got[p.OffsetKey] = p
	}
	if !got[a].retry || got[a].Offset != 5 || got[b].retry || got[b].Offset != 9 {
		t.Fatalf("after requeue: %+v", got)
	}
}

// TestOffsetLookupDuringFlush: a value taken for a flush is still what a
// query sees until the flush settles; before the fix a query in that
// window fell back to the applied state (an older offset, or none), and a
// consumer started then re-consumed what its group had committed.
func TestOffsetLookupDuringFlush(t *testing.T) {
	o := newOffsetCommitter(nil, meta.NewState(), 0, hclog.NewNullLogger())
	a := meta.OffsetKey{Group: "g", Topic: "t", QueueID: 0}
	o.update(a, 30)
	taken := o.take()
	if off, ok := o.lookup(a); !ok || off != 30 {
		t.Fatalf("during the flush: lookup = %d, %v; want 30", off, ok)
	}
	o.update(a, 31) // a newer report while the flush runs
	o.settle(taken)
	if off, ok := o.lookup(a); !ok || off != 31 {
		t.Fatalf("after settling the older value: lookup = %d, %v; want the pending 31", off, ok)
	}
	o.settle(o.take())
	if off, ok := o.lookup(a); ok {
		t.Fatalf("after the last flush settled: lookup = %d; want none (the applied state answers)", off)
	}
}
