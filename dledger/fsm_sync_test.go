package dledger

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
)

type syncingSink struct {
	Dispatcher
	syncs int
	err   error
}

func (s *syncingSink) Sync() error { s.syncs++; return s.err }

// memSnapshotSink is a raft.SnapshotSink in memory that records what
// happened to it.
type memSnapshotSink struct {
	bytes.Buffer
	closed, canceled bool
	syncsAtWrite     int
	sink             *syncingSink
}

func (m *memSnapshotSink) Write(p []byte) (int, error) {
	m.syncsAtWrite = m.sink.syncs
	return m.Buffer.Write(p)
}
func (m *memSnapshotSink) ID() string    { return "mem" }
func (m *memSnapshotSink) Close() error  { m.closed = true; return nil }
func (m *memSnapshotSink) Cancel() error { m.canceled = true; return nil }

// TestSnapshotSyncsSinksBeforePersisting: the sinks are synced when the
// snapshot is persisted, before its data is written, and a failed sync
// cancels the snapshot.
func TestSnapshotSyncsSinksBeforePersisting(t *testing.T) {
	q := &syncingSink{}
	f := &fsm{st: newCounters(), dispatch: q, log: hclog.NewNullLogger()}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if q.syncs != 0 {
		t.Fatalf("Snapshot (on the FSM goroutine) synced the sink %d times, want 0: Persist does", q.syncs)
	}
	out := &memSnapshotSink{sink: q}
	if err := snap.Persist(out); err != nil {
		t.Fatal(err)
	}
	if q.syncs != 1 || out.syncsAtWrite != 1 || !out.closed || out.Len() == 0 {
		t.Fatalf("persist: %d syncs (%d before the write), closed %v, %d bytes", q.syncs, out.syncsAtWrite, out.closed, out.Len())
	}

	q.err = errors.New("disk gone")
	snap, err = f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	out = &memSnapshotSink{sink: q}
	if err := snap.Persist(out); !errors.Is(err, q.err) {
		t.Fatalf("persist with a failing sink sync = %v, want the sync error", err)
	}
	if !out.canceled || out.closed || out.Len() != 0 {
		t.Fatalf("failed sync: canceled %v, closed %v, %d bytes written", out.canceled, out.closed, out.Len())
	}
}
