package dledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/wire"
)

// Frozen snapshot format constants (see doc.go).
const (
	snapshotMagic = 0x524d5153 // "RMQS"
	// snapshotVersion 2 carries the state machine's bytes opaquely;
	// version 1 (metadata encoded here) is not read.
	snapshotVersion = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptSnapshot means a snapshot failed its checksum or did not parse.
var ErrCorruptSnapshot = errors.New("dledger: corrupt snapshot")

// encodeSnapshot serializes the counters and the state machine's bytes in
// a deterministic order, so equal states give equal bytes.
func encodeSnapshot(s *counters, sm []byte) []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := &wire.Encoder{}
	e.U32(snapshotMagic)
	e.U8(snapshotVersion)
	e.U64(s.applied)
	e.I64(s.commitNext)
	keys := slices.SortedFunc(maps.Keys(s.queueNext), QueueKey.Compare)
	e.Count(len(keys))
	for _, k := range keys {
		e.Str(k.Topic)
		e.I32(k.QueueID)
		e.I64(s.queueNext[k])
	}
	e.Count(len(sm))
	e.B = append(e.B, sm...)
	return binary.BigEndian.AppendUint32(e.B, crc32.Checksum(e.B, castagnoli))
}

// decodeSnapshot returns the counters and the state machine's bytes.
func decodeSnapshot(b []byte) (*counters, []byte, error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("%w: %d bytes", ErrCorruptSnapshot, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, nil, fmt.Errorf("%w: checksum mismatch", ErrCorruptSnapshot)
	}
	d := &wire.Decoder{B: body, Sentinel: ErrCorruptSnapshot}
	if d.U32() != snapshotMagic {
		return nil, nil, fmt.Errorf("%w: bad magic", ErrCorruptSnapshot)
	}
	if v := d.U8(); v != snapshotVersion {
		return nil, nil, fmt.Errorf("%w: format version %d (this binary reads %d; a data directory of a raftmq before the state-machine split must be removed)",
			ErrCorruptSnapshot, v, snapshotVersion)
	}
	s := newCounters()
	s.applied, s.commitNext = d.U64(), d.I64()
	for i, n := 0, d.Count(14); i < n && d.Err == nil; i++ {
		k := QueueKey{d.Str(), d.I32()}
		s.queueNext[k] = d.I64()
	}
	sm := d.Bytes(int(d.U32()))
	if err := d.End(); err != nil {
		return nil, nil, err
	}
	return s, sm, nil
}

// fsmSnapshot is a point-in-time copy of the applied state, taken on the
// FSM goroutine and persisted concurrently with further applies.
type fsmSnapshot struct {
	data []byte
	// syncSinks makes what the sinks hold durable; see fsm.Snapshot.
	syncSinks func() error
}

// Persist implements raft.FSMSnapshot. The sinks are synced first: once
// the snapshot is on disk raft never replays the entries it covers, so
// what the consumequeue and index hold of them must be durable before it
// is. Syncing here rather than in fsm.Snapshot keeps the FSM goroutine
// applying meanwhile (with thousands of queues the sync is thousands of
// fsyncs); the sinks may then hold entries past the snapshot too, which
// replay after a restart finds equal.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if s.syncSinks != nil {
		if err := s.syncSinks(); err != nil {
			_ = sink.Cancel()
			return fmt.Errorf("dledger: sync sinks before snapshot: %w", err)
		}
	}
	if _, err := sink.Write(s.data); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() {}
