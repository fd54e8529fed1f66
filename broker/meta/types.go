package meta

import (
	"cmp"
	"math"

	"github.com/raftmq/raftmq/internal/wire"
)

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

func (t *TopicConfig) encode(e *wire.Encoder) {
	e.Str(t.Name)
	e.I32(t.ReadQueueNums)
	e.I32(t.WriteQueueNums)
	e.I32(t.Perm)
	e.I32(t.TopicSysFlag)
	e.Bool(t.Order)
	e.U8(t.FilterType)
}

func (t *TopicConfig) decode(d *wire.Decoder) {
	t.Name, t.ReadQueueNums, t.WriteQueueNums, t.Perm, t.TopicSysFlag = d.Str(), d.I32(), d.I32(), d.I32(), d.I32()
	t.Order, t.FilterType = d.Bool(), d.U8()
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

func (g *SubscriptionGroupConfig) encode(e *wire.Encoder) {
	e.Str(g.GroupName)
	e.Bool(g.ConsumeEnable)
	e.Bool(g.ConsumeFromMinEnable)
	e.Bool(g.ConsumeBroadcastEnable)
	e.I32(g.RetryQueueNums)
	e.I32(g.RetryMaxTimes)
	e.I64(g.BrokerID)
	e.I64(g.WhichBrokerWhenConsumeSlowly)
	e.Bool(g.NotifyConsumerIdsChangedEnable)
}

func (g *SubscriptionGroupConfig) decode(d *wire.Decoder) {
	g.GroupName = d.Str()
	g.ConsumeEnable, g.ConsumeFromMinEnable, g.ConsumeBroadcastEnable = d.Bool(), d.Bool(), d.Bool()
	g.RetryQueueNums, g.RetryMaxTimes = d.I32(), d.I32()
	g.BrokerID, g.WhichBrokerWhenConsumeSlowly = d.I64(), d.I64()
	g.NotifyConsumerIdsChangedEnable = d.Bool()
}

// OffsetKey names one consumer offset: a group's position in a queue.
type OffsetKey struct {
	Group   string
	Topic   string
	QueueID int32
}

// Compare orders keys by group, topic and queue.
func (a OffsetKey) Compare(b OffsetKey) int {
	if c := cmp.Compare(a.Group, b.Group); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.QueueID, b.QueueID)
}

// compareOffsets orders consumer offsets by their keys.
func compareOffsets(a, b ConsumerOffset) int { return a.OffsetKey.Compare(b.OffsetKey) }

// ConsumerOffset is one committed consumer offset.
type ConsumerOffset struct {
	OffsetKey
	Offset int64
}

func encodeOffsets(e *wire.Encoder, offs []ConsumerOffset) {
	e.Count(len(offs))
	for _, o := range offs {
		e.Str(o.Group)
		e.Str(o.Topic)
		e.I32(o.QueueID)
		e.I64(o.Offset)
	}
}

func decodeOffsets(d *wire.Decoder) []ConsumerOffset {
	n := d.Count(2 + 2 + 4 + 8)
	offs := make([]ConsumerOffset, 0, n)
	for i := 0; i < n && d.Err == nil; i++ {
		k := OffsetKey{Group: d.Str(), Topic: d.Str(), QueueID: d.I32()}
		offs = append(offs, ConsumerOffset{k, d.I64()})
	}
	return offs
}

// DelayProgress is the delivery progress of one delay level: the next
// offset of its queue in the schedule topic.
type DelayProgress struct {
	QueueID int32
	Offset  int64
}

// TimerProgress is the timer scheduler's committed progress over the
// timer queue (broker/timer.go explains it):
//
//	O  every timer-queue offset below O has been indexed by a scheduler;
//	T  a message at an offset below O is delivered iff its deliver time is
//	   at or before T (the watermark);
//	L  every offset below L is delivered (a rebuild hint, L ≤ O);
//	K  the tie cursor of T: of the messages due exactly at T, those at
//	   offsets below K are delivered (math.MaxInt64: all of them), so one
//	   millisecond's messages may span several bounded rounds.
type TimerProgress struct {
	O, T, L, K int64
}

// TimerAllTies is the K of a progress whose millisecond T is delivered
// whole; progress written before K existed decodes with it.
const TimerAllTies = math.MaxInt64

// Delivered reports whether the timer message at queue offset off, due
// at deliverMs, is delivered according to p.
func (p TimerProgress) Delivered(off, deliverMs int64) bool {
	return off < p.O && p.Covers(off, deliverMs)
}

// Covers reports whether the watermark (T and its tie cursor K) is past
// the message at off due at deliverMs: it is delivered once O is too.
func (p TimerProgress) Covers(off, deliverMs int64) bool {
	return deliverMs < p.T || (deliverMs == p.T && off < p.K)
}
