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
