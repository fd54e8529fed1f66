package dledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"

	"github.com/hashicorp/raft"
)

// Frozen snapshot format constants (see doc.go).
const (
	snapshotMagic   = 0x524d5153 // "RMQS"
	snapshotVersion = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptSnapshot means a snapshot failed its checksum or did not parse.
var ErrCorruptSnapshot = errors.New("dledger: corrupt snapshot")

// encodeSnapshot serializes the state in a deterministic order, so equal
// states give equal bytes (tests compare replicas that way).
func (s *state) encodeSnapshot() []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := &encoder{}
	e.u32(snapshotMagic)
	e.u8(snapshotVersion)
	e.u64(s.applied)
	e.i64(s.commitNext)
	e.count(len(s.topics))
	for _, name := range sortedKeys(s.topics) {
		t := s.topics[name]
		t.encode(e)
	}
	e.count(len(s.groups))
	for _, name := range sortedKeys(s.groups) {
		g := s.groups[name]
		g.encode(e)
	}
	offs := make([]ConsumerOffset, 0, len(s.offsets))
	for k, v := range s.offsets {
		offs = append(offs, ConsumerOffset{k, v})
	}
	sortOffsets(offs)
	encodeOffsets(e, offs)
	encodeQueues(e, s.queueNext)
	ids := make([]int32, 0, len(s.delay))
	for id := range s.delay {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	e.count(len(ids))
	for _, id := range ids {
		e.i32(id)
		e.i64(s.delay[id])
	}
	return binary.BigEndian.AppendUint32(e.b, crc32.Checksum(e.b, castagnoli))
}

func encodeQueues(e *encoder, q map[QueueKey]int64) {
	keys := make([]QueueKey, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Topic != keys[j].Topic {
			return keys[i].Topic < keys[j].Topic
		}
		return keys[i].QueueID < keys[j].QueueID
	})
	e.count(len(keys))
	for _, k := range keys {
		e.str(k.Topic)
		e.i32(k.QueueID)
		e.i64(q[k])
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func decodeSnapshot(b []byte) (*state, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorruptSnapshot, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorruptSnapshot)
	}
	d := &decoder{b: body}
	if d.u32() != snapshotMagic || d.u8() != snapshotVersion {
		return nil, fmt.Errorf("%w: bad magic or version", ErrCorruptSnapshot)
	}
	s := newState()
	s.applied, s.commitNext = d.u64(), d.i64()
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		var t TopicConfig
		t.decode(d)
		s.topics[t.Name] = t
	}
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		var g SubscriptionGroupConfig
		g.decode(d)
		s.groups[g.GroupName] = g
	}
	for _, o := range decodeOffsets(d) {
		s.offsets[o.OffsetKey] = o.Offset
	}
	for i, n := 0, d.count(14); i < n && d.err == nil; i++ {
		k := QueueKey{d.str(), d.i32()}
		s.queueNext[k] = d.i64()
	}
	for i, n := 0, d.count(12); i < n && d.err == nil; i++ {
		id := d.i32()
		s.delay[id] = d.i64()
	}
	if err := d.end(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptSnapshot, err)
	}
	return s, nil
}

// fsmSnapshot is a point-in-time copy of the metadata, taken on the FSM
// goroutine and persisted concurrently with further applies.
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

func readSnapshot(r io.Reader) (*state, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return decodeSnapshot(b)
}
