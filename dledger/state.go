package dledger

import (
	"sort"
	"sync"
)

// QueueKey names one message queue.
type QueueKey struct {
	Topic   string
	QueueID int32
}

// state is the FSM's applied metadata. Every field changes only by
// applying committed entries, so it is identical on every replica at the
// same applied index.
type state struct {
	mu         sync.RWMutex
	topics     map[string]TopicConfig
	groups     map[string]SubscriptionGroupConfig
	offsets    map[OffsetKey]int64
	queueNext  map[QueueKey]int64 // next queue offset of each queue
	commitNext int64              // next commit offset
	delay      map[int32]int64
	applied    uint64 // raft index of the last applied entry
}

func newState() *state {
	return &state{
		topics:    map[string]TopicConfig{},
		groups:    map[string]SubscriptionGroupConfig{},
		offsets:   map[OffsetKey]int64{},
		queueNext: map[QueueKey]int64{},
		delay:     map[int32]int64{},
	}
}

// counters copies the offset counters a new leader starts from.
func (s *state) counters() (map[QueueKey]int64, int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	q := make(map[QueueKey]int64, len(s.queueNext))
	for k, v := range s.queueNext {
		q[k] = v
	}
	return q, s.commitNext
}

// applyMeta applies a metadata command. Caller holds mu.
func (s *state) applyMeta(c Command) {
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
	}
}

// Metadata is read access to a node's applied metadata. It reflects what
// this replica has applied, which on a follower may trail the leader.
type Metadata struct{ s *state }

// Topic returns a topic's configuration.
func (m Metadata) Topic(name string) (TopicConfig, bool) {
	m.s.mu.RLock()
	defer m.s.mu.RUnlock()
	t, ok := m.s.topics[name]
	return t, ok
}

// Topics returns every topic configuration, sorted by name.
func (m Metadata) Topics() []TopicConfig {
	m.s.mu.RLock()
	out := make([]TopicConfig, 0, len(m.s.topics))
	for _, t := range m.s.topics {
		out = append(out, t)
	}
	m.s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SubscriptionGroup returns a consumer group's configuration.
func (m Metadata) SubscriptionGroup(name string) (SubscriptionGroupConfig, bool) {
	m.s.mu.RLock()
	defer m.s.mu.RUnlock()
	g, ok := m.s.groups[name]
	return g, ok
}

// SubscriptionGroups returns every consumer group, sorted by name.
func (m Metadata) SubscriptionGroups() []SubscriptionGroupConfig {
	m.s.mu.RLock()
	out := make([]SubscriptionGroupConfig, 0, len(m.s.groups))
	for _, g := range m.s.groups {
		out = append(out, g)
	}
	m.s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].GroupName < out[j].GroupName })
	return out
}

// ConsumerOffset returns a group's committed offset in a queue.
func (m Metadata) ConsumerOffset(k OffsetKey) (int64, bool) {
	m.s.mu.RLock()
	defer m.s.mu.RUnlock()
	o, ok := m.s.offsets[k]
	return o, ok
}

// ConsumerOffsets returns every committed offset of a group.
func (m Metadata) ConsumerOffsets(group string) []ConsumerOffset {
	m.s.mu.RLock()
	var out []ConsumerOffset
	for k, v := range m.s.offsets {
		if k.Group == group {
			out = append(out, ConsumerOffset{k, v})
		}
	}
	m.s.mu.RUnlock()
	sortOffsets(out)
	return out
}

// QueueMaxOffset returns the next queue offset of a queue (RocketMQ's max
// offset: one past the last message), 0 for a queue never written.
func (m Metadata) QueueMaxOffset(k QueueKey) int64 {
	m.s.mu.RLock()
	defer m.s.mu.RUnlock()
	return m.s.queueNext[k]
}

// Queues returns the next queue offset of every queue ever written.
func (m Metadata) Queues() map[QueueKey]int64 {
	q, _ := m.s.counters()
	return q
}

// MaxCommitOffset returns the next commit offset: one past the last
// applied message byte.
func (m Metadata) MaxCommitOffset() int64 {
	m.s.mu.RLock()
	defer m.s.mu.RUnlock()
	return m.s.commitNext
}

// DelayOffset returns the delivery progress of a delay queue.
func (m Metadata) DelayOffset(queueID int32) (int64, bool) {
	m.s.mu.RLock()
	defer m.s.mu.RUnlock()
	o, ok := m.s.delay[queueID]
	return o, ok
}

// AppliedIndex returns the raft index of the last entry applied to this
// metadata.
func (m Metadata) AppliedIndex() uint64 {
	m.s.mu.RLock()
	defer m.s.mu.RUnlock()
	return m.s.applied
}

func sortOffsets(o []ConsumerOffset) {
	sort.Slice(o, func(i, j int) bool {
		a, b := o[i].OffsetKey, o[j].OffsetKey
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.QueueID < b.QueueID
	})
}

// Encode returns the metadata in the snapshot encoding. It is
// deterministic: replicas at the same applied index return equal bytes.
func (m Metadata) Encode() []byte { return m.s.encodeSnapshot() }
