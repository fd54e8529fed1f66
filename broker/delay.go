package broker

// Delay levels and timers: parking. A message sent with DELAY=n (n > 0,
// capped at the highest configured level; half and rollback messages
// excepted) is stored, as RocketMQ's CommitLog.putMessage does, in
// SCHEDULE_TOPIC_XXXX queue n-1 with its own topic and queue in the
// REAL_TOPIC and REAL_QID properties; its consumequeue tags code is its
// deliver time (Unix ms). A timer message (timer.go) is parked the same
// way in the timer topic. The leader's schedulers (delay_scheduler.go,
// timer.go) move due messages to their real queue in the same committed
// entry that advances their progress.
//
// GET_ALL_DELAY_OFFSET (45) answers, on any node, the progress this node
// has applied, as RocketMQ's DelayOffsetSerializeWrapper:
// {"offsetTable":{1:12,2:0}} — the level as an unquoted number key, which
// is fastjson's output and what RocketMQ's admin tools parse. Only levels
// that have progress appear, as in RocketMQ.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// DefaultMessageDelayLevel is RocketMQ's messageDelayLevel default.
const DefaultMessageDelayLevel = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

const (
	// maxDelayLevels bounds the level count: level n uses schedule queue
	// n-1.
	maxDelayLevels = 64
	// maxLevelDelay bounds one level's delay.
	maxLevelDelay = 7 * 24 * time.Hour
)

// ParseDelayLevels parses a messageDelayLevel string: space-separated
// positive durations with unit ms, s, m, h or d.
func ParseDelayLevels(s string) ([]time.Duration, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 || len(fields) > maxDelayLevels {
		return nil, fmt.Errorf("broker: MessageDelayLevel %q: want 1..%d levels", s, maxDelayLevels)
	}
	out := make([]time.Duration, 0, len(fields))
	for i, f := range fields {
		d, err := parseLevel(f)
		if err != nil || d <= 0 || d > maxLevelDelay {
			return nil, fmt.Errorf("broker: MessageDelayLevel level %d %q: want a duration in (0, %v] with unit ms, s, m, h or d", i+1, f, maxLevelDelay)
		}
		out = append(out, d)
	}
	return out, nil
}

func parseLevel(f string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(f, "d"); ok {
		days, err := strconv.Atoi(n)
		return time.Duration(days) * 24 * time.Hour, err
	}
	return time.ParseDuration(f)
}

// parker redirects messages that must wait to their parking queue.
type parker struct {
	levels []time.Duration
}

// park redirects a message that must wait — a transaction half, a DELAY
// level or a timer — to its parking queue, returning its deliver time (Unix ms). The error is a
// bad timer property.
func (p *parker) park(m *message.MessageExt, now time.Time) (int64, bool, error) {
	if isHalf(m) {
		// A half waits for its decision; DELAY and timers apply when it
		// is committed.
		parkHalf(m)
		return 0, false, nil
	}
	if at, ok := p.parkDelayed(m, now); ok {
		return at, true, nil
	}
	return parkTimer(m, now)
}

// parkDelayed redirects m to its delay level's schedule queue if it asks
// for one, returning its deliver time (Unix ms) for the tags code.
func (p *parker) parkDelayed(m *message.MessageExt, now time.Time) (int64, bool) {
	level := m.DelayLevel()
	if tv := message.TransactionValue(m.SysFlag); level <= 0 || tv == message.SysFlagTransactionPrepared || tv == message.SysFlagTransactionRollback {
		return 0, false
	}
	level = min(level, len(p.levels))
	m.SetDelayLevel(level)
	m.SetProperty(message.PropertyRealTopic, m.Topic)
	m.SetProperty(message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.Topic, m.QueueID = protocol.ScheduleTopic, int32(level-1)
	return now.Add(p.levels[level-1]).UnixMilli(), true
}

// delayOffsets serves GET_ALL_DELAY_OFFSET.
type delayOffsets struct {
	meta   *meta.State
	levels []time.Duration
}

func (d *delayOffsets) register(m mux) { m.HandleFunc(remoting.ReqGetAllDelayOffset, d.allDelayOffset) }

func (d *delayOffsets) allDelayOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var sb strings.Builder
	sb.WriteString(`{"offsetTable":{`)
	n := 0
	for i := range d.levels {
		off, ok := d.meta.DelayOffset(int32(i))
		if !ok {
			continue
		}
		if n > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%d:%d", i+1, off)
		n++
	}
	sb.WriteString("}}")
	resp := okResponse(req)
	resp.Body = []byte(sb.String())
	return resp
}
