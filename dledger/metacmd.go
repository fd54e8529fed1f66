package dledger

import "fmt"

// TopicConfig is a topic's configuration as RocketMQ's TopicConfig.
type TopicConfig struct {
	Name           string
	ReadQueueNums  int32
	WriteQueueNums int32
	Perm           int32
	TopicSysFlag   int32
	Order          bool
	// FilterType is RocketMQ's TopicFilterType: 0 SINGLE_TAG, 1 MULTI_TAG.
	FilterType uint8
}

func (t *TopicConfig) encode(e *encoder) {
	e.str(t.Name)
	e.i32(t.ReadQueueNums)
	e.i32(t.WriteQueueNums)
	e.i32(t.Perm)
	e.i32(t.TopicSysFlag)
	e.bool(t.Order)
	e.u8(t.FilterType)
}

func (t *TopicConfig) decode(d *decoder) {
	t.Name, t.ReadQueueNums, t.WriteQueueNums, t.Perm, t.TopicSysFlag = d.str(), d.i32(), d.i32(), d.i32(), d.i32()
	t.Order, t.FilterType = d.bool(), d.u8()
}

// SubscriptionGroupConfig is a consumer group's configuration as
// RocketMQ's SubscriptionGroupConfig.
type SubscriptionGroupConfig struct {
	GroupName                      string
	ConsumeEnable                  bool
	ConsumeFromMinEnable           bool
	ConsumeBroadcastEnable         bool
	RetryQueueNums                 int32
	RetryMaxTimes                  int32
	BrokerID                       int64
	WhichBrokerWhenConsumeSlowly   int64
	NotifyConsumerIdsChangedEnable bool
}

func (g *SubscriptionGroupConfig) encode(e *encoder) {
	e.str(g.GroupName)
	e.bool(g.ConsumeEnable)
	e.bool(g.ConsumeFromMinEnable)
	e.bool(g.ConsumeBroadcastEnable)
	e.i32(g.RetryQueueNums)
	e.i32(g.RetryMaxTimes)
	e.i64(g.BrokerID)
	e.i64(g.WhichBrokerWhenConsumeSlowly)
	e.bool(g.NotifyConsumerIdsChangedEnable)
}

func (g *SubscriptionGroupConfig) decode(d *decoder) {
	g.GroupName = d.str()
	g.ConsumeEnable, g.ConsumeFromMinEnable, g.ConsumeBroadcastEnable = d.bool(), d.bool(), d.bool()
	g.RetryQueueNums, g.RetryMaxTimes = d.i32(), d.i32()
	g.BrokerID, g.WhichBrokerWhenConsumeSlowly = d.i64(), d.i64()
	g.NotifyConsumerIdsChangedEnable = d.bool()
}

// OffsetKey names one consumer offset: a group's position in a queue.
type OffsetKey struct {
	Group   string
	Topic   string
	QueueID int32
}

// ConsumerOffset is one committed consumer offset.
type ConsumerOffset struct {
	OffsetKey
	Offset int64
}

func encodeOffsets(e *encoder, offs []ConsumerOffset) {
	e.count(len(offs))
	for _, o := range offs {
		e.str(o.Group)
		e.str(o.Topic)
		e.i32(o.QueueID)
		e.i64(o.Offset)
	}
}

func decodeOffsets(d *decoder) []ConsumerOffset {
	n := d.count(2 + 2 + 4 + 8)
	offs := make([]ConsumerOffset, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		offs = append(offs, ConsumerOffset{OffsetKey{d.str(), d.str(), d.i32()}, d.i64()})
	}
	return offs
}

// CommitOffsetsCommand records consumer progress. Concurrent commits are
// coalesced into one entry.
type CommitOffsetsCommand struct{ Offsets []ConsumerOffset }

// Type implements Command.
func (*CommitOffsetsCommand) Type() CommandType       { return CmdCommitOffsets }
func (c *CommitOffsetsCommand) encodeBody(e *encoder) { encodeOffsets(e, c.Offsets) }

// ResetOffsetsCommand overwrites consumer offsets (admin reset, consume
// from timestamp). It applies like a commit but is a distinct type so the
// log says why an offset moved backwards.
type ResetOffsetsCommand struct{ Offsets []ConsumerOffset }

// Type implements Command.
func (*ResetOffsetsCommand) Type() CommandType       { return CmdResetOffsets }
func (c *ResetOffsetsCommand) encodeBody(e *encoder) { encodeOffsets(e, c.Offsets) }

// PutTopicCommand creates or replaces a topic's configuration.
type PutTopicCommand struct{ Topic TopicConfig }

// Type implements Command.
func (*PutTopicCommand) Type() CommandType       { return CmdPutTopic }
func (c *PutTopicCommand) encodeBody(e *encoder) { c.Topic.encode(e) }

// DeleteTopicCommand deletes a topic's configuration and its consumer
// offsets. Queue counters are kept so a re-created topic never reuses a
// queue offset that a consumer may still hold.
type DeleteTopicCommand struct{ Name string }

// Type implements Command.
func (*DeleteTopicCommand) Type() CommandType       { return CmdDeleteTopic }
func (c *DeleteTopicCommand) encodeBody(e *encoder) { e.str(c.Name) }

// PutSubscriptionGroupCommand creates or replaces a consumer group.
type PutSubscriptionGroupCommand struct{ Group SubscriptionGroupConfig }

// Type implements Command.
func (*PutSubscriptionGroupCommand) Type() CommandType       { return CmdPutSubscriptionGroup }
func (c *PutSubscriptionGroupCommand) encodeBody(e *encoder) { c.Group.encode(e) }

// DeleteSubscriptionGroupCommand deletes a consumer group's configuration.
type DeleteSubscriptionGroupCommand struct{ Name string }

// Type implements Command.
func (*DeleteSubscriptionGroupCommand) Type() CommandType       { return CmdDeleteSubscriptionGroup }
func (c *DeleteSubscriptionGroupCommand) encodeBody(e *encoder) { e.str(c.Name) }

// DelayProgress is the delivery progress of one delay level: the next
// offset of its queue in the schedule topic.
type DelayProgress struct {
	QueueID int32
	Offset  int64
}

// DelayProgressCommand advances delay-queue progress.
type DelayProgressCommand struct{ Progress []DelayProgress }

// Type implements Command.
func (*DelayProgressCommand) Type() CommandType { return CmdDelayProgress }
func (c *DelayProgressCommand) encodeBody(e *encoder) {
	e.count(len(c.Progress))
	for _, p := range c.Progress {
		e.i32(p.QueueID)
		e.i64(p.Offset)
	}
}

func decodeMeta(t CommandType, d *decoder) (Command, error) {
	switch t {
	case CmdCommitOffsets:
		return &CommitOffsetsCommand{Offsets: decodeOffsets(d)}, d.err
	case CmdResetOffsets:
		return &ResetOffsetsCommand{Offsets: decodeOffsets(d)}, d.err
	case CmdPutTopic:
		c := &PutTopicCommand{}
		c.Topic.decode(d)
		return c, d.err
	case CmdDeleteTopic:
		return &DeleteTopicCommand{Name: d.str()}, d.err
	case CmdPutSubscriptionGroup:
		c := &PutSubscriptionGroupCommand{}
		c.Group.decode(d)
		return c, d.err
	case CmdDeleteSubscriptionGroup:
		return &DeleteSubscriptionGroupCommand{Name: d.str()}, d.err
	case CmdDelayProgress:
		n := d.count(12)
		c := &DelayProgressCommand{Progress: make([]DelayProgress, 0, n)}
		for i := 0; i < n && d.err == nil; i++ {
			c.Progress = append(c.Progress, DelayProgress{d.i32(), d.i64()})
		}
		return c, d.err
	case CmdTransactionState:
		return nil, ErrReserved
	default:
		return nil, fmt.Errorf("%w: type %d", ErrUnknownCommand, uint8(t))
	}
}
