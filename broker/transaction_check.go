package broker

// The transaction check-back, on the leader: every
// Config.TransactionCheckInterval it reads the half topic from the oldest
// undecided half and, for each half still undecided that is older than
// Config.TransactionTimeout (its CHECK_IMMUNITY_TIME_IN_SECONDS for the
// first check) and not checked back within the interval, records the
// check-back in one committed entry (meta.TxnChecksCommand) and then sends
// CHECK_TRANSACTION_STATE (39) to a live producer of the half's group:
// header tranStateTableOffset, commitLogOffset, msgId (UNIQ_KEY),
// transactionId, offsetMsgId; body the half message with its real topic
// and queue, as RocketMQ's Broker2Client. The producer answers with
// END_TRANSACTION (fromTransactionCheck). Only check-backs sent count
// (RocketMQ counts those it found no producer for, too, which discards a
// half before a producer that reconnects after a failover is heard from).
// A half checked back Config.TransactionCheckMax times without a
// decision, one older than the timeout plus twice TransactionCheckMax
// intervals (no producer of its group came to be asked), or one whose record
// retention removed, is discarded: moved to TRANS_CHECK_MAX_TIME_TOPIC
// (nothing when the record is gone) with its op record and the decision,
// in one entry, and logged. Because checks are recorded and decisions
// replicated, a new leader neither repeats a check early nor checks a
// decided half.

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/internal/wallclock"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

const (
	// txnScanChunk is the consumequeue read size of a check round.
	txnScanChunk = 256
	// txnCheckSendTimeout bounds one CHECK_TRANSACTION_STATE write.
	txnCheckSendTimeout = 3 * time.Second
)

// txnChecker is the leader's check-back service.
type txnChecker struct {
	*txnService
	producers *producerManager
	// settings has the group's transactionTimeOut,
	// transactionCheckInterval and transactionCheckMax, read into the
	// fields below before every round.
	settings *runtimeSettings
	timeout  time.Duration
	interval time.Duration
	max      int32
}

// refresh reads the run-time settings into the checker's fields.
func (c *txnChecker) refresh() {
	v := c.settings.get()
	c.timeout, c.interval, c.max = v.txnTimeout, v.txnCheckInterval, v.txnCheckMax
}

// run checks back until ctx ends or something fails.
func (c *txnChecker) run(ctx context.Context) error {
	term, err := c.rep.ready(ctx)
	if err != nil {
		return err
	}
	c.refresh()
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for ctx.Err() == nil {
		interval := c.interval
		if c.refresh(); c.interval != interval {
			t.Reset(c.interval)
		}
		if err := c.round(ctx, term, wallclock.Now()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return nil
}

// due is an undecided half to check back or discard.
type due struct {
	hf    *half
	check meta.TxnCheck
	conn  *remoting.Conn // the producer to ask
}

// round checks back or discards every due half.
func (c *txnChecker) round(ctx context.Context, term uint64, now time.Time) error {
	dues, gone, err := c.collect(now)
	if err != nil {
		return err
	}
	for _, off := range gone {
		if err := c.discardGone(ctx, term, off); err != nil {
			return err
		}
	}
	var checks []meta.TxnCheck
	var send []due
	for _, d := range dues {
		if d.check.Times >= c.max || c.expired(d.hf, now) {
			if err := c.discard(ctx, term, d.hf); err != nil {
				return err
			}
			continue
		}
		conn := c.producers.conn(d.hf.m.Property(message.PropertyProducerGroup))
		if conn == nil {
			c.log.Warn("check back: no producer of the group is connected", "group", d.hf.m.Property(message.PropertyProducerGroup), "half", d.hf.offset)
			continue
		}
		d.conn = conn
		d.check = meta.TxnCheck{HalfOffset: d.hf.offset, Times: d.check.Times + 1, AtMs: now.UnixMilli()}
		checks = append(checks, d.check)
		send = append(send, d)
	}
	if len(checks) == 0 {
		return nil
	}
	if _, err := c.rep.propose(ctx, &meta.TxnChecksCommand{Checks: checks}); err != nil {
		return err
	}
	for _, d := range send {
		c.sendCheck(d.conn, d.hf)
	}
	return nil
}

// expired reports whether a half has waited longer than all its
// check-backs could take: no producer of its group was there to ask.
func (c *txnChecker) expired(hf *half, now time.Time) bool {
	budget := c.timeout + 2*time.Duration(c.max)*c.interval
	return now.UnixMilli()-hf.m.StoreTimestamp > budget.Milliseconds()
}

// collect reads the undecided halves from the low watermark on: those
// due now, and the offsets whose records are gone.
func (c *txnChecker) collect(now time.Time) (dues []due, gone []int64, err error) {
	off := c.meta.TxnLow()
	var buf []store.Entry
	for {
		entries, minOff, err := c.store.ReadEntries(protocol.TransHalfTopic, 0, off, txnScanChunk, buf)
		if errors.Is(err, store.ErrOffsetOutOfRange) && off < minOff {
			for ; off < minOff; off++ { // retention removed them
				if _, decided := c.meta.TxnDecided(off); !decided {
					gone = append(gone, off)
				}
			}
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		for i, e := range entries {
			o := off + int64(i)
			if _, decided := c.meta.TxnDecided(o); decided {
				continue
			}
			hf, err := c.readHalf(e.CommitOffset)
			if errors.Is(err, store.ErrRemoved) {
				gone = append(gone, o)
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			if k := c.meta.TxnCheckOf(o); c.isDue(hf, k, now) {
				dues = append(dues, due{hf: hf, check: k})
			}
		}
		off += int64(len(entries))
		if len(entries) < txnScanChunk {
			return dues, gone, nil
		}
		buf = entries
	}
}

// isDue reports whether a half is due for its next check-back.
func (c *txnChecker) isDue(hf *half, k meta.TxnCheck, now time.Time) bool {
	if k.Times > 0 {
		return now.UnixMilli()-k.AtMs >= c.interval.Milliseconds()
	}
	wait := c.timeout
	if s, err := strconv.Atoi(hf.m.Property(message.PropertyCheckImmunityTimeInSeconds)); err == nil && s > 0 {
		wait = time.Duration(s) * time.Second
	}
	return now.UnixMilli()-hf.m.StoreTimestamp >= wait.Milliseconds()
}

// discard moves a half that ran out of check-backs aside.
func (c *txnChecker) discard(ctx context.Context, term uint64, hf *half) error {
	unlock := c.lock(hf.offset)
	defer unlock()
	if _, decided := c.meta.TxnDecided(hf.offset); decided {
		return nil // decided while this round ran
	}
	c.log.Warn("transaction half message discarded after the last check-back", "half", hf.offset,
		"msg_id", hf.m.UniqKey(), "topic", hf.m.Property(message.PropertyRealTopic),
		"group", hf.m.Property(message.PropertyProducerGroup), "checks", c.max)
	return c.decide(ctx, term, hf, meta.TxnDiscarded)
}

// discardGone decides a half whose record is no longer stored.
func (c *txnChecker) discardGone(ctx context.Context, term uint64, off int64) error {
	unlock := c.lock(off)
	defer unlock()
	if _, decided := c.meta.TxnDecided(off); decided {
		return nil
	}
	c.log.Warn("transaction half message removed by retention before a decision; discarded", "half", off)
	cmd := &meta.TxnEndCommand{HalfOffset: off, Decision: meta.TxnDiscarded}
	_, err := c.rep.propose(ctx, cmd)
	return err
}

// sendCheck asks a producer of the half's group about it, oneway.
func (c *txnChecker) sendCheck(conn *remoting.Conn, hf *half) {
	group := hf.m.Property(message.PropertyProducerGroup)
	body, err := checkBody(hf.m)
	if err != nil {
		c.log.Error("check back: encoding the half message", "half", hf.offset, "error", err)
		return
	}
	h := protocol.CheckTransactionStateHeader{TranStateTableOffset: hf.offset, CommitLogOffset: hf.m.CommitLogOffset,
		MsgID: hf.m.UniqKey(), TransactionID: hf.m.UniqKey(), OffsetMsgID: hf.m.MsgID()}
	ctx, cancel := context.WithTimeout(context.Background(), txnCheckSendTimeout)
	defer cancel()
	if err := conn.SendOneway(ctx, remoting.NewRequest(remoting.ReqCheckTransactionState, h.Ext(), body)); err != nil {
		c.log.Warn("check back failed", "group", group, "half", hf.offset, "remote", conn.RemoteAddr().String(), "error", err)
	}
}

// checkBody is the half message as a producer's checker sees it: its real
// topic and queue, its offsets in the half topic.
func checkBody(m *message.MessageExt) ([]byte, error) {
	c := cloneExt(m)
	c.Topic = c.Property(message.PropertyRealTopic)
	if qid, err := strconv.Atoi(c.Property(message.PropertyRealQueueID)); err == nil {
		c.QueueID = int32(qid)
	}
	return message.AppendExt(nil, c)
}
