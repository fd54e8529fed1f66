package dledger

import (
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
)

type syncingSink struct {
	QueueSink
	syncs int
	err   error
}

func (s *syncingSink) Sync() error { s.syncs++; return s.err }

func TestSnapshotSyncsSinksFirst(t *testing.T) {
	q := &syncingSink{}
	f := &fsm{st: newState(), queues: q, log: hclog.NewNullLogger()}
	if _, err := f.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if q.syncs != 1 {
		t.Fatalf("queue sink synced %d times before a snapshot, want 1", q.syncs)
	}
	q.err = errors.New("disk gone")
	if _, err := f.Snapshot(); err == nil || !errors.Is(err, q.err) {
		t.Fatalf("snapshot with a failing sink sync = %v, want the sync error", err)
	}
}
