package dledgertest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wire"
)

// ErrBadCommand is wrapped by MemStateMachine's decode errors.
var ErrBadCommand = errors.New("dledgertest: bad command")

// Command types of the test state machine. Frozen for the tests' logs.
const (
	CmdSet      dledger.CommandType = 100
	CmdDelete   dledger.CommandType = 101
	CmdSetBatch dledger.CommandType = 102
)

// SetCommand sets Key to Value.
type SetCommand struct{ Key, Value string }

// Type implements dledger.Command.
func (*SetCommand) Type() dledger.CommandType { return CmdSet }

// AppendBody implements dledger.Command.
func (c *SetCommand) AppendBody(b []byte) ([]byte, error) {
	e := wire.Encoder{B: b, Sentinel: ErrBadCommand}
	e.Str(c.Key)
	e.Str(c.Value)
	return e.B, e.Err
}

// DeleteCommand deletes Key.
type DeleteCommand struct{ Key string }

// Type implements dledger.Command.
func (*DeleteCommand) Type() dledger.CommandType { return CmdDelete }

// AppendBody implements dledger.Command.
func (c *DeleteCommand) AppendBody(b []byte) ([]byte, error) {
	e := wire.Encoder{B: b, Sentinel: ErrBadCommand}
	e.Str(c.Key)
	return e.B, e.Err
}

// SetBatchCommand sets several keys; concurrent ones are merged into one
// entry (dledger.Batchable), as consumer offset commits are.
type SetBatchCommand struct{ Pairs []SetCommand }

var _ dledger.Batchable = (*SetBatchCommand)(nil)

// Type implements dledger.Command.
func (*SetBatchCommand) Type() dledger.CommandType { return CmdSetBatch }

// Len implements dledger.Batchable.
func (c *SetBatchCommand) Len() int { return len(c.Pairs) }

// Merge implements dledger.Batchable.
func (c *SetBatchCommand) Merge(more []dledger.Command) dledger.Command {
	all := &SetBatchCommand{Pairs: slices.Clone(c.Pairs)}
	for _, m := range more {
		all.Pairs = append(all.Pairs, m.(*SetBatchCommand).Pairs...)
	}
	return all
}

// AppendBody implements dledger.Command.
func (c *SetBatchCommand) AppendBody(b []byte) ([]byte, error) {
	e := wire.Encoder{B: b, Sentinel: ErrBadCommand}
	e.Count(len(c.Pairs))
	for _, p := range c.Pairs {
		e.Str(p.Key)
		e.Str(p.Value)
	}
	return e.B, e.Err
}

// MemStateMachine is a key/value dledger.StateMachine for tests. Entries
// counts the commands applied (a merged batch counts once).
type MemStateMachine struct {
	mu      sync.Mutex
	kv      map[string]string
	entries map[uint64]int // raft index → commands applied at it
}

var _ dledger.StateMachine = (*MemStateMachine)(nil)

// NewMemStateMachine returns an empty state machine.
func NewMemStateMachine() *MemStateMachine {
	return &MemStateMachine{kv: map[string]string{}, entries: map[uint64]int{}}
}

// Apply implements dledger.StateMachine.
func (s *MemStateMachine) Apply(index uint64, t dledger.CommandType, body []byte) error {
	d := wire.Decoder{B: body, Sentinel: ErrBadCommand}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch t {
	case CmdSet:
		k, v := d.Str(), d.Str()
		if d.End() == nil {
			s.kv[k] = v
		}
	case CmdDelete:
		k := d.Str()
		if d.End() == nil {
			delete(s.kv, k)
		}
	case CmdSetBatch:
		n := d.Count(4)
		pairs := make([][2]string, 0, n)
		for i := 0; i < n && d.Err == nil; i++ {
			pairs = append(pairs, [2]string{d.Str(), d.Str()})
		}
		if d.End() == nil {
			for _, p := range pairs {
				s.kv[p[0]] = p[1]
			}
		}
	default:
		return fmt.Errorf("%w: type %d", ErrBadCommand, t)
	}
	if d.Err == nil {
		s.entries[index]++
	}
	return d.Err
}

// Get returns a key's value.
func (s *MemStateMachine) Get(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[key]
	return v, ok
}

// AppliedAt returns how many commands were applied at raft index index.
func (s *MemStateMachine) AppliedAt(index uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[index]
}

// Snapshot implements dledger.StateMachine: the keys in order.
func (s *MemStateMachine) Snapshot() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := wire.Encoder{Sentinel: ErrBadCommand}
	keys := slices.Sorted(maps.Keys(s.kv))
	e.Count(len(keys))
	for _, k := range keys {
		e.Str(k)
		e.Str(s.kv[k])
	}
	return e.B, e.Err
}

// Restore implements dledger.StateMachine.
func (s *MemStateMachine) Restore(data []byte) error {
	d := wire.Decoder{B: data, Sentinel: ErrBadCommand}
	kv := map[string]string{}
	for i, n := 0, d.Count(4); i < n && d.Err == nil; i++ {
		k := d.Str()
		kv[k] = d.Str()
	}
	if err := d.End(); err != nil {
		return err
	}
	s.mu.Lock()
	s.kv = kv
	s.mu.Unlock()
	return nil
}
