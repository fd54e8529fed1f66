package broker

// Delay levels. A message sent with DELAY=n (n > 0, capped at the highest
// configured level; half and rollback messages excepted) is stored, as
// RocketMQ's CommitLog.putMessage does, in SCHEDULE_TOPIC_XXXX queue n-1
// with its own topic and queue in the REAL_TOPIC and REAL_QID properties;
// its consumequeue tags code is its deliver time (Unix ms). The leader runs
// one scheduler per level (delay_scheduler.go) that moves due messages to
// their real queue in the same committed entry that advances the level's
// progress.
//
// GET_ALL_DELAY_OFFSET (45) answers, on any node, the progress this node
// has applied, as RocketMQ's DelayOffsetSerializeWrapper:
// {"offsetTable":{1:12,2:0}} — the level as an unquoted number key, which
// is fastjson's output and what RocketMQ's admin tools parse. Only levels
// that have progress appear, as in RocketMQ.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// DefaultMessageDelayLevel is RocketMQ's messageDelayLevel default.
const DefaultMessageDelayLevel = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

const (
	// maxDelayLevels bounds the level count: level n uses schedule queue
	// n-1 and delay progress key n-1, below the keys timers use.
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

// parkDelayed redirects m to its delay level's schedule queue if it asks
// for one, returning its deliver time (Unix ms) for the tags code.
func (b *Broker) parkDelayed(m *message.MessageExt, now time.Time) (int64, bool) {
	level := m.DelayLevel()
	if tv := message.TransactionValue(m.SysFlag); level <= 0 || tv == message.SysFlagTransactionPrepared || tv == message.SysFlagTransactionRollback {
		return 0, false
	}
	level = min(level, len(b.delay.levels))
	m.SetDelayLevel(level)
	m.SetProperty(message.PropertyRealTopic, m.Topic)
	m.SetProperty(message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.Topic, m.QueueID = ScheduleTopic, int32(level-1)
	return now.Add(b.delay.levels[level-1]).UnixMilli(), true
}

// registerDelay sets up the delay levels and their admin code.
func (b *Broker) registerDelay() {
	levels, err := ParseDelayLevels(b.cfg.MessageDelayLevel)
	if err != nil { // Validate ran first; keep a working broker anyway
		levels, _ = ParseDelayLevels(DefaultMessageDelayLevel)
	}
	b.delay = &delayService{b: b, levels: levels}
	b.handle(remoting.ReqGetAllDelayOffset, b.allDelayOffset)
}

func (b *Broker) allDelayOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	md := b.node.Metadata()
	type lv struct {
		level  int
		offset int64
	}
	var got []lv
	for i := range b.delay.levels {
		if off, ok := md.DelayOffset(int32(i)); ok {
			got = append(got, lv{i + 1, off})
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].level < got[j].level })
	var sb strings.Builder
	sb.WriteString(`{"offsetTable":{`)
	for i, g := range got {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%d:%d", g.level, g.offset)
	}
	sb.WriteString("}}")
	resp := okResponse(req)
	resp.Body = []byte(sb.String())
	return resp
}

// park redirects a message that must wait — a DELAY level or a timer — to
// its parking queue, returning its deliver time (Unix ms). The error is a
// bad timer property.
func (b *Broker) park(m *message.MessageExt, now time.Time) (int64, bool, error) {
	if at, ok := b.parkDelayed(m, now); ok {
		return at, true, nil
	}
	return b.parkTimer(m, now)
}
