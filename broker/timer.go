package broker

// Timer messages (RocketMQ 5's timer properties on a 4.x wire): a message
// with TIMER_DELIVER_MS (absolute Unix ms) or TIMER_DELAY_SEC (seconds from
// now) due later than now is parked in the timer topic rmq_sys_wheel_timer
// queue 0 with REAL_TOPIC/REAL_QID, its consumequeue tags code the deliver
// time, TIMER_DELIVER_MS normalised to that time. Due at once or in the
// past: stored as an ordinary message. More than 7 days ahead, or not a
// number: MESSAGE_ILLEGAL. A DELAY level takes precedence over timers.
//
// Delivery is exactly once across failovers, as for delay levels, with a
// progress that out-of-order deadlines need: four committed values (the
// metadata's TimerProgress, its own command):
//
//	O  every timer-queue offset below O has been indexed by a scheduler;
//	T  the watermark and K its tie cursor: a message at an offset below O
//	   is delivered iff its deliver time is before T, or is T and its
//	   offset is below K (K = MaxInt64: all of T's);
//	L  every offset below L is delivered (a rebuild hint, L ≤ O).
//
// Entries at offsets ≥ O are pending whatever their time. The leader keeps
// them in a time-bucketed wheel (timer_wheel.go), except late arrivals —
// entries indexed after their time passed the watermark, which O's next
// advance would otherwise count as delivered — kept in offset order
// apart. A round is bounded by timerBatch messages and timerBatchBytes
// (one message alone may exceed the bytes): it takes late arrivals first,
// in offset order, moving O only up to the first one left; once none is
// left, O moves to everything indexed and the round goes on with the
// wheel's due entries in (deliver time, offset) order, splitting a
// millisecond if it must, which sets T and K. It commits one
// PutMessagesCommand with the delivered messages and the new progress as
// its side command, pinned to the leader's term, so each message is
// delivered once whatever fails over, and no round outgrows a raft entry
// however many messages fall due in one millisecond.
//
// On becoming leader the wheel is rebuilt by reading the timer queue from
// L to its end — 20 bytes of consumequeue per pending-or-skipped entry,
// about 1 s of sequential reads per million — skipping the delivered
// ones. Sends never touch the wheel: a send parks one record like any
// other, and the scheduler indexes new entries as the queue grows.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wallclock"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/store"
)

const (
	// MaxTimerDelay is the furthest ahead a timer may be set.
	MaxTimerDelay = 7 * 24 * time.Hour
	// timerBatch and timerBatchBytes bound the messages and record bytes
	// of one round (a single message may exceed the bytes).
	timerBatch      = 256
	timerBatchBytes = 1 << 20
	// timerScanChunk is the consumequeue read size when indexing.
	timerScanChunk = 1024
	// timerLowEvery is how often L is recomputed from the wheel (O(n)).
	timerLowEvery = 10 * time.Second
)

// errTimerIllegal marks a bad timer property.
var errTimerIllegal = errors.New("timer message illegal")

// timerDeadline reads a message's timer, ok false when it has none.
func timerDeadline(m *message.MessageExt, now time.Time) (int64, bool, error) {
	if v := m.Property(message.PropertyTimerDeliverMS); v != "" {
		at, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%w: %s %q is not a number", errTimerIllegal, message.PropertyTimerDeliverMS, v)
		}
		return at, true, nil
	}
	if v := m.Property(message.PropertyTimerDelaySec); v != "" {
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil || sec > int64(MaxTimerDelay/time.Second) {
			return 0, false, fmt.Errorf("%w: %s %q is not a number of seconds within 7 days", errTimerIllegal, message.PropertyTimerDelaySec, v)
		}
		return now.UnixMilli() + sec*1000, true, nil
	}
	return 0, false, nil
}

// parkTimer redirects a timer message due in the future to the timer
// queue and returns its deadline.
func parkTimer(m *message.MessageExt, now time.Time) (int64, bool, error) {
	at, ok, err := timerDeadline(m, now)
	if err != nil || !ok || at <= now.UnixMilli() {
		return 0, false, err
	}
	if at > now.Add(MaxTimerDelay).UnixMilli() {
		return 0, false, fmt.Errorf("%w: deliver time %d is more than %v ahead", errTimerIllegal, at, MaxTimerDelay)
	}
	m.RemoveProperty(message.PropertyTimerDelaySec)
	m.SetProperty(message.PropertyTimerDeliverMS, strconv.FormatInt(at, 10))
	m.SetProperty(message.PropertyRealTopic, m.Topic)
	m.SetProperty(message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.Topic, m.QueueID = protocol.TimerTopic, 0
	return at, true, nil
}

// timerScheduler is the leader's timer scheduler.
type timerScheduler struct {
	*scheduled
	pending atomic.Int64 // timers in the leader's wheel
}

// timerRun is one leader term's scheduler state.
type timerRun struct {
	s       *timerScheduler
	term    uint64
	prog    meta.TimerProgress // committed
	scan    int64              // next timer-queue offset to index
	wheel   *timerWheel
	late    []timerEntry // late arrivals, in offset order
	lowDone time.Time
}

var timerQueueKey = dledger.QueueKey{Topic: protocol.TimerTopic, QueueID: 0}

// run delivers timers until ctx ends or something fails.
func (s *timerScheduler) run(ctx context.Context) error {
	term, err := s.rep.barrier(ctx)
	if err != nil {
		return err
	}
	prog := s.meta.Timer()
	prog.L = min(prog.L, prog.O)
	r := &timerRun{s: s, term: term, prog: prog, wheel: newTimerWheel(), lowDone: time.Now()}
	r.scan = r.prog.L
	defer s.pending.Store(0)
	start := time.Now()
	if err := r.index(); err != nil {
		return err
	}
	s.log.Info("timer wheel rebuilt", "pending", r.wheel.n, "scanned", r.scan-r.prog.L, "took", time.Since(start))
	for ctx.Err() == nil {
		grown := s.store.WaitArrival(timerQueueKey)
		if err := r.index(); err != nil {
			return err
		}
		s.pending.Store(int64(r.wheel.n + len(r.late)))
		now := wallclock.UnixMilli()
		if delivered, err := r.round(ctx, now); err != nil || delivered {
			if err != nil {
				return err
			}
			continue
		}
		var wait time.Duration
		if at, ok := r.wheel.nextDue(); ok {
			wait = time.Duration(max(at-now, 1)) * time.Millisecond
		}
		waitFor(ctx, grown, wait)
	}
	return nil
}

// index adds the timer-queue entries from scan on that are still pending.
func (r *timerRun) index() error {
	var buf []store.Entry
	for {
		entries, minOff, err := r.s.store.ReadEntries(timerQueueKey.Topic, 0, r.scan, timerScanChunk, buf)
		if errors.Is(err, store.ErrOffsetOutOfRange) && r.scan < minOff {
			r.scan = minOff // retention removed the rest
			continue
		}
		if err != nil {
			return fmt.Errorf("broker: reading the timer queue at %d: %w", r.scan, err)
		}
		for _, e := range entries {
			r.add(timerEntry{offset: r.scan, deliverMs: e.TagsCode, commit: e.CommitOffset, size: e.Size})
			r.scan++
		}
		if len(entries) < timerScanChunk {
			return nil
		}
		buf = entries
	}
}

// add files an indexed entry: nothing if the progress says it is
// delivered, a late arrival if O's advance would say so, else the wheel.
func (r *timerRun) add(e timerEntry) {
	p := r.prog
	switch {
	case p.Delivered(e.offset, e.deliverMs):
	case p.Covers(e.offset, e.deliverMs): // not delivered, yet covered: O has not reached it
		r.late = append(r.late, e)
	default:
		r.wheel.add(e)
	}
}

// round delivers what is due at nowMs, reporting whether it committed.
func (r *timerRun) round(ctx context.Context, nowMs int64) (bool, error) {
	next := r.prog
	var taken []timerEntry
	bytes := 0
	for len(r.late) > 0 && len(taken) < timerBatch && (len(taken) == 0 || bytes+int(r.late[0].size) <= timerBatchBytes) {
		taken = append(taken, r.late[0])
		bytes += int(r.late[0].size)
		r.late = r.late[1:]
	}
	if len(r.late) > 0 {
		next.O = r.late[0].offset
	} else {
		next.O = r.scan
		due, mark, tie := r.wheel.takeDue(nowMs, timerTake{limit: timerBatch - len(taken), limitBytes: timerBatchBytes - bytes, oneOver: len(taken) == 0})
		if len(due) > 0 {
			next.T, next.K = mark, tie // never below the old (T, K): pending entries are after it
		}
		taken = append(taken, due...)
	}
	if len(taken) == 0 {
		return false, nil
	}
	msgs := make([]dledger.Message, 0, len(taken))
	for _, e := range taken {
		m, err := r.s.rebuildDue(store.Entry{CommitOffset: e.commit, Size: e.size, TagsCode: e.deliverMs})
		if err != nil {
			return false, err
		}
		if m != nil {
			msgs = append(msgs, *m)
		}
	}
	next.L = r.low(next.O)
	if err := r.s.deliver(ctx, r.term, msgs, &meta.TimerProgressCommand{Progress: next}); err != nil {
		return false, err
	}
	r.prog = next
	return true, nil
}

// low is the progress's L: the lowest pending offset (at most o, the new
// O), recomputed every timerLowEvery because it costs O(pending).
func (r *timerRun) low(o int64) int64 {
	if r.wheel.n == 0 && len(r.late) == 0 {
		return o
	}
	if time.Since(r.lowDone) <= timerLowEvery {
		return min(r.prog.L, o)
	}
	r.lowDone = time.Now()
	l := o
	if m, ok := r.wheel.minOffset(); ok {
		l = min(l, m)
	}
	if len(r.late) > 0 {
		l = min(l, r.late[0].offset)
	}
	return l
}
