package meta

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wire"
	"github.com/raftmq/raftmq/protocol"
)

// State is a node's applied metadata. Every field changes only by applying
// committed commands, so it is identical on every replica at the same
// applied index. Reads reflect what this replica has applied, which on a
// follower may trail the leader.
type State struct {
	mu      sync.RWMutex
	topics  map[string]TopicConfig
	groups  map[string]SubscriptionGroupConfig
	offsets map[OffsetKey]int64
	delay   map[int32]int64
	timer   TimerProgress
	txn     txnState
	acl     aclState
	// aclVersion mirrors acl.version for lock-free reads (ACLVersion).
	aclVersion atomic.Uint64
	// brokerPerm is the group's brokerPermission; 0: never set (read and
	// write).
	brokerPerm int32
	// settings are the run-time broker settings set (BrokerSettingsCommand);
	// settingsGen counts their changes, for lock-free staleness checks.
	settings    map[string]string
	settingsGen atomic.Uint64
	applied     uint64 // raft index of the last command applied here
}

var _ dledger.StateMachine = (*State)(nil)

// NewState returns an empty state.
func NewState() *State {
	return &State{
		topics:  map[string]TopicConfig{},
		groups:  map[string]SubscriptionGroupConfig{},
		offsets: map[OffsetKey]int64{},
		delay:   map[int32]int64{},
		txn:     newTxnState(),
		acl:     newACLState(),

		settings: map[string]string{},
	}
}

// Apply implements dledger.StateMachine.
func (s *State) Apply(index uint64, t dledger.CommandType, body []byte) error {
	c, err := Decode(t, body)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apply(c)
	s.acl.apply(index, c)
	s.aclVersion.Store(s.acl.version)
	s.applied = index
	return nil
}

// apply applies a decoded command. Caller holds mu.
func (s *State) apply(c dledger.Command) {
	switch c := c.(type) {
	case *CommitOffsetsCommand:
		for _, o := range c.Offsets {
			s.offsets[o.OffsetKey] = o.Offset
		}
	case *ResetOffsetsCommand:
		for _, o := range c.Offsets {
			s.offsets[o.OffsetKey] = o.Offset
		}
	case *PutTopicCommand:
		s.topics[c.Topic.Name] = c.Topic
	case *DeleteTopicCommand:
		delete(s.topics, c.Name)
		for k := range s.offsets {
			if k.Topic == c.Name {
				delete(s.offsets, k)
			}
		}
	case *PutSubscriptionGroupCommand:
		s.groups[c.Group.GroupName] = c.Group
	case *DeleteSubscriptionGroupCommand:
		delete(s.groups, c.Name)
	case *DelayProgressCommand:
		for _, p := range c.Progress {
			s.delay[p.QueueID] = p.Offset
		}
	case *TimerProgressCommand:
		s.timer = c.Progress
	case *TxnEndCommand:
		s.txn.end(c)
	case *TxnChecksCommand:
		s.txn.check(c)
	case *BrokerPermissionCommand:
		s.brokerPerm = c.Perm
	case *BrokerSettingsCommand:
		s.applySettings(c)
	}
}

// BrokerPermission is the group's brokerPermission (read and write unless
// set otherwise).
func (s *State) BrokerPermission() int32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.brokerPerm == 0 {
		return protocol.PermReadWrite
	}
	return s.brokerPerm
}

// Topic returns a topic's configuration.
func (s *State) Topic(name string) (TopicConfig, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.topics[name]
	return t, ok
}

// Topics returns every topic configuration, sorted by name.
func (s *State) Topics() []TopicConfig {
	s.mu.RLock()
	out := slices.Collect(maps.Values(s.topics))
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b TopicConfig) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// SubscriptionGroup returns a consumer group's configuration.
func (s *State) SubscriptionGroup(name string) (SubscriptionGroupConfig, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g, ok := s.groups[name]
	return g, ok
}

// SubscriptionGroups returns every consumer group, sorted by name.
func (s *State) SubscriptionGroups() []SubscriptionGroupConfig {
	s.mu.RLock()
	out := slices.Collect(maps.Values(s.groups))
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b SubscriptionGroupConfig) int { return cmp.Compare(a.GroupName, b.GroupName) })
	return out
}

// AllConsumerOffsets returns every committed offset, sorted.
func (s *State) AllConsumerOffsets() []ConsumerOffset {
	s.mu.RLock()
	out := make([]ConsumerOffset, 0, len(s.offsets))
	for k, v := range s.offsets {
		out = append(out, ConsumerOffset{k, v})
	}
	s.mu.RUnlock()
	sortOffsets(out)
	return out
}

// ConsumerOffset returns a group's committed offset in a queue.
func (s *State) ConsumerOffset(k OffsetKey) (int64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.offsets[k]
	return o, ok
}

// ConsumerOffsets returns every committed offset of a group, sorted.
func (s *State) ConsumerOffsets(group string) []ConsumerOffset {
	s.mu.RLock()
	var out []ConsumerOffset
	for k, v := range s.offsets {
		if k.Group == group {
			out = append(out, ConsumerOffset{k, v})
		}
	}
	s.mu.RUnlock()
	sortOffsets(out)
	return out
}

// DelayOffset returns the delivery progress of a delay level's queue.
func (s *State) DelayOffset(queueID int32) (int64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.delay[queueID]
	return o, ok
}

// Timer returns the timer scheduler's committed progress.
func (s *State) Timer() TimerProgress {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.timer
}

// AppliedIndex returns the raft index of the last command applied here
// (puts do not count: dledger.Node.AppliedIndex does).
func (s *State) AppliedIndex() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.applied
}

func sortOffsets(o []ConsumerOffset) { slices.SortFunc(o, compareOffsets) }

// snapshotVersion is the version of Snapshot's encoding. Frozen; Restore
// also reads version 1, which lacks the timer's tie cursor, version 2,
// which lacks the ACL, and version 3, which lacks the run-time settings.
const snapshotVersion = 4

// Snapshot implements dledger.StateMachine: a deterministic encoding, so
// replicas at the same applied index return equal bytes.
func (s *State) Snapshot() ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := &wire.Encoder{Sentinel: ErrBadCommand}
	e.U8(snapshotVersion)
	e.U64(s.applied)
	e.Count(len(s.topics))
	for _, name := range slices.Sorted(maps.Keys(s.topics)) {
		t := s.topics[name]
		t.encode(e)
	}
	e.Count(len(s.groups))
	for _, name := range slices.Sorted(maps.Keys(s.groups)) {
		g := s.groups[name]
		g.encode(e)
	}
	offs := make([]ConsumerOffset, 0, len(s.offsets))
	for k, v := range s.offsets {
		offs = append(offs, ConsumerOffset{k, v})
	}
	sortOffsets(offs)
	encodeOffsets(e, offs)
	ids := slices.Sorted(maps.Keys(s.delay))
	e.Count(len(ids))
	for _, id := range ids {
		e.I32(id)
		e.I64(s.delay[id])
	}
	e.I64(s.timer.O)
	e.I64(s.timer.T)
	e.I64(s.timer.L)
	s.txn.encode(e)
	e.I64(s.timer.K)
	s.acl.encode(e)
	e.I32(s.brokerPerm)
	encodeSettings(e, s.settings)
	return e.B, e.Err
}

// Restore implements dledger.StateMachine.
func (s *State) Restore(data []byte) error {
	d := &wire.Decoder{B: data, Sentinel: ErrBadCommand}
	v := d.U8()
	if d.Err == nil && (v < 1 || v > snapshotVersion) {
		return fmt.Errorf("%w: snapshot version %d, this binary reads 1 to %d", ErrBadCommand, v, snapshotVersion)
	}
	ns := NewState()
	ns.applied = d.U64()
	for i, n := 0, d.Count(1); i < n && d.Err == nil; i++ {
		var t TopicConfig
		t.decode(d)
		ns.topics[t.Name] = t
	}
	for i, n := 0, d.Count(1); i < n && d.Err == nil; i++ {
		var g SubscriptionGroupConfig
		g.decode(d)
		ns.groups[g.GroupName] = g
	}
	for _, o := range decodeOffsets(d) {
		ns.offsets[o.OffsetKey] = o.Offset
	}
	for i, n := 0, d.Count(12); i < n && d.Err == nil; i++ {
		id := d.I32()
		ns.delay[id] = d.I64()
	}
	ns.timer = TimerProgress{O: d.I64(), T: d.I64(), L: d.I64()}
	ns.txn = decodeTxnState(d)
	ns.timer.K = TimerAllTies
	if v >= 2 {
		ns.timer.K = d.I64()
	}
	if v >= 3 {
		ns.acl = decodeACLState(d)
		ns.brokerPerm = d.I32()
	}
	if v >= 4 {
		ns.settings = decodeSettings(d)
	}
	if err := d.End(); err != nil {
		return err
	}
	s.mu.Lock()
	s.topics, s.groups, s.offsets, s.delay, s.timer, s.applied = ns.topics, ns.groups, ns.offsets, ns.delay, ns.timer, ns.applied
	s.txn, s.acl, s.brokerPerm, s.settings = ns.txn, ns.acl, ns.brokerPerm, ns.settings
	s.aclVersion.Store(ns.acl.version)
	s.settingsGen.Add(1)
	s.mu.Unlock()
	return nil
}
