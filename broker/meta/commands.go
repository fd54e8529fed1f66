package meta

import (
	"errors"
	"fmt"
	"slices"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wire"
)

// ErrBadCommand means a command could not be encoded or decoded.
var ErrBadCommand = errors.New("meta: bad command")

// Command types. Frozen: they are on disk in every commitlog. Never
// renumber, only append; 1 is dledger's put entry.
const (
	CmdCommitOffsets           dledger.CommandType = 2
	CmdPutTopic                dledger.CommandType = 3
	CmdDeleteTopic             dledger.CommandType = 4
	CmdPutSubscriptionGroup    dledger.CommandType = 5
	CmdDeleteSubscriptionGroup dledger.CommandType = 6
	CmdDelayProgress           dledger.CommandType = 7
	CmdResetOffsets            dledger.CommandType = 8
	// CmdTransactionState decides a half message (TxnEndCommand).
	CmdTransactionState dledger.CommandType = 9
	// CmdTimerProgress is the timer progress without the tie cursor, as
	// written before it existed: decoded with K = TimerAllTies.
	CmdTimerProgress dledger.CommandType = 10
	CmdTxnChecks     dledger.CommandType = 11
	// CmdTimerProgressTies is TimerProgressCommand's type: {O, T, L, K}.
	CmdTimerProgressTies dledger.CommandType = 12
	// 13-16 are the ACL's (acl.go).
	// CmdBrokerPermission sets the group's brokerPermission.
	CmdBrokerPermission dledger.CommandType = 17
	// 18 is CmdBrokerSettings (settings.go).
)

func encoder(b []byte) *wire.Encoder { return &wire.Encoder{B: b, Sentinel: ErrBadCommand} }

// CommitOffsetsCommand records consumer progress. Concurrent commits are
// merged into one entry (dledger.Batchable).
type CommitOffsetsCommand struct{ Offsets []ConsumerOffset }

var _ dledger.Batchable = (*CommitOffsetsCommand)(nil)

// Type implements dledger.Command.
func (*CommitOffsetsCommand) Type() dledger.CommandType { return CmdCommitOffsets }

// AppendBody implements dledger.Command.
func (c *CommitOffsetsCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	encodeOffsets(e, c.Offsets)
	return e.B, e.Err
}

// Len implements dledger.Batchable.
func (c *CommitOffsetsCommand) Len() int { return len(c.Offsets) }

// Merge implements dledger.Batchable: later offsets of the same key win,
// as applying the commands in order would.
func (c *CommitOffsetsCommand) Merge(more []dledger.Command) dledger.Command {
	all := &CommitOffsetsCommand{Offsets: slices.Clone(c.Offsets)}
	for _, m := range more {
		all.Offsets = append(all.Offsets, m.(*CommitOffsetsCommand).Offsets...)
	}
	return all
}

// ResetOffsetsCommand overwrites consumer offsets (admin reset, consume
// from timestamp). It applies like a commit but is a distinct type so the
// log says why an offset moved backwards.
type ResetOffsetsCommand struct{ Offsets []ConsumerOffset }

// Type implements dledger.Command.
func (*ResetOffsetsCommand) Type() dledger.CommandType { return CmdResetOffsets }

// AppendBody implements dledger.Command.
func (c *ResetOffsetsCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	encodeOffsets(e, c.Offsets)
	return e.B, e.Err
}

// PutTopicCommand creates or replaces a topic's configuration.
type PutTopicCommand struct{ Topic TopicConfig }

// Type implements dledger.Command.
func (*PutTopicCommand) Type() dledger.CommandType { return CmdPutTopic }

// AppendBody implements dledger.Command.
func (c *PutTopicCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	c.Topic.encode(e)
	return e.B, e.Err
}

// DeleteTopicCommand deletes a topic's configuration and its consumer
// offsets. Queue counters (dledger's) are kept, so a re-created topic
// never reuses a queue offset that a consumer may still hold.
type DeleteTopicCommand struct{ Name string }

// Type implements dledger.Command.
func (*DeleteTopicCommand) Type() dledger.CommandType { return CmdDeleteTopic }

// AppendBody implements dledger.Command.
func (c *DeleteTopicCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	e.Str(c.Name)
	return e.B, e.Err
}

// PutSubscriptionGroupCommand creates or replaces a consumer group.
type PutSubscriptionGroupCommand struct{ Group SubscriptionGroupConfig }

// Type implements dledger.Command.
func (*PutSubscriptionGroupCommand) Type() dledger.CommandType { return CmdPutSubscriptionGroup }

// AppendBody implements dledger.Command.
func (c *PutSubscriptionGroupCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	c.Group.encode(e)
	return e.B, e.Err
}

// DeleteSubscriptionGroupCommand deletes a consumer group's configuration.
type DeleteSubscriptionGroupCommand struct{ Name string }

// Type implements dledger.Command.
func (*DeleteSubscriptionGroupCommand) Type() dledger.CommandType {
	return CmdDeleteSubscriptionGroup
}

// AppendBody implements dledger.Command.
func (c *DeleteSubscriptionGroupCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	e.Str(c.Name)
	return e.B, e.Err
}

// DelayProgressCommand advances delay-level progress. Delivered delayed
// messages carry it as their put's side command.
type DelayProgressCommand struct{ Progress []DelayProgress }

// Type implements dledger.Command.
func (*DelayProgressCommand) Type() dledger.CommandType { return CmdDelayProgress }

// AppendBody implements dledger.Command.
func (c *DelayProgressCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	e.Count(len(c.Progress))
	for _, p := range c.Progress {
		e.I32(p.QueueID)
		e.I64(p.Offset)
	}
	return e.B, e.Err
}

// TimerProgressCommand sets the timer scheduler's progress. Delivered
// timer messages carry it as their put's side command.
type TimerProgressCommand struct{ Progress TimerProgress }

// Type implements dledger.Command.
func (*TimerProgressCommand) Type() dledger.CommandType { return CmdTimerProgressTies }

// AppendBody implements dledger.Command.
func (c *TimerProgressCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	e.I64(c.Progress.O)
	e.I64(c.Progress.T)
	e.I64(c.Progress.L)
	e.I64(c.Progress.K)
	return e.B, e.Err
}

// Decode decodes a command body of type t, as the state machine does
// when it applies one.
func Decode(t dledger.CommandType, body []byte) (dledger.Command, error) {
	d := &wire.Decoder{B: body, Sentinel: ErrBadCommand}
	c, err := decode(t, d)
	if err != nil {
		return nil, err
	}
	return c, d.End()
}

func decode(t dledger.CommandType, d *wire.Decoder) (dledger.Command, error) {
	switch t {
	case CmdCommitOffsets:
		return &CommitOffsetsCommand{Offsets: decodeOffsets(d)}, d.Err
	case CmdResetOffsets:
		return &ResetOffsetsCommand{Offsets: decodeOffsets(d)}, d.Err
	case CmdPutTopic:
		c := &PutTopicCommand{}
		c.Topic.decode(d)
		return c, d.Err
	case CmdDeleteTopic:
		return &DeleteTopicCommand{Name: d.Str()}, d.Err
	case CmdPutSubscriptionGroup:
		c := &PutSubscriptionGroupCommand{}
		c.Group.decode(d)
		return c, d.Err
	case CmdDeleteSubscriptionGroup:
		return &DeleteSubscriptionGroupCommand{Name: d.Str()}, d.Err
	case CmdDelayProgress:
		n := d.Count(12)
		c := &DelayProgressCommand{Progress: make([]DelayProgress, 0, n)}
		for i := 0; i < n && d.Err == nil; i++ {
			q := d.I32()
			c.Progress = append(c.Progress, DelayProgress{q, d.I64()})
		}
		return c, d.Err
	case CmdTimerProgress:
		c := &TimerProgressCommand{}
		c.Progress.O, c.Progress.T, c.Progress.L = d.I64(), d.I64(), d.I64()
		c.Progress.K = TimerAllTies
		return c, d.Err
	case CmdTimerProgressTies:
		c := &TimerProgressCommand{}
		c.Progress.O, c.Progress.T, c.Progress.L, c.Progress.K = d.I64(), d.I64(), d.I64(), d.I64()
		return c, d.Err
	case CmdTransactionState:
		return decodeTxnEnd(d), d.Err
	case CmdTxnChecks:
		return decodeTxnChecks(d), d.Err
	case CmdBrokerPermission:
		return &BrokerPermissionCommand{Perm: d.I32()}, d.Err
	case CmdBrokerSettings:
		return &BrokerSettingsCommand{Settings: decodeSettings(d)}, d.Err
	default:
		if c, ok := decodeACL(t, d); ok {
			return c, d.Err
		}
		return nil, fmt.Errorf("%w: unknown type %d", ErrBadCommand, t)
	}
}

// BrokerPermissionCommand sets the group's brokerPermission (RocketMQ's
// broker config of that name): PermRead|PermWrite normally; without
// PermWrite the group takes no sends and registers its topics read-only
// (a drain); without PermRead it serves no pulls.
type BrokerPermissionCommand struct{ Perm int32 }

// Type implements dledger.Command.
func (*BrokerPermissionCommand) Type() dledger.CommandType { return CmdBrokerPermission }

// AppendBody implements dledger.Command.
func (c *BrokerPermissionCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	e.I32(c.Perm)
	return e.B, e.Err
}
