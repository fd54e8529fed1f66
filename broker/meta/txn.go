package meta

// Transaction state: which half messages are decided and how often each
// undecided one was checked back. Half messages live in queue 0 of
// RMQ_SYS_TRANS_HALF_TOPIC, so a half is named by its queue offset there.
// A decision is applied in the same entry as its effect (the committed
// message, the op record), so "decided" and "delivered" never disagree
// across a failover; a check-back is recorded before it is sent, so a new
// leader knows how many were made.

import (
	"fmt"
	"maps"
	"slices"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wire"
)

var errBadDecision = fmt.Errorf("%w: transaction decision out of range", ErrBadCommand)

// TxnDecision is what became of a half message. Frozen (on disk).
type TxnDecision uint8

// Decisions.
const (
	TxnCommitted  TxnDecision = 1 // its message was stored on its topic
	TxnRolledBack TxnDecision = 2
	// TxnDiscarded: checked back transactionCheckMax times without an
	// answer, or its record is gone; it was moved aside, never delivered.
	TxnDiscarded TxnDecision = 3
)

// String names the decision.
func (d TxnDecision) String() string {
	switch d {
	case TxnCommitted:
		return "committed"
	case TxnRolledBack:
		return "rolled back"
	case TxnDiscarded:
		return "discarded"
	}
	return "undecided"
}

// txnKeepDecided is how many decisions below the low watermark are kept,
// so a late END_TRANSACTION of a recent half is still told what happened
// to it (commit after rollback is an error, a repeated commit is not).
const txnKeepDecided = 1 << 16

// TxnCheck is one undecided half's check-back record.
type TxnCheck struct {
	HalfOffset int64
	Times      int32
	AtMs       int64 // when the last check-back was made
}

// TxnEndCommand decides a half message. It is proposed as the side
// command of the put that carries the decision's effect.
type TxnEndCommand struct {
	HalfOffset int64
	Decision   TxnDecision
}

// Type implements dledger.Command.
func (*TxnEndCommand) Type() dledger.CommandType { return CmdTransactionState }

// AppendBody implements dledger.Command.
func (c *TxnEndCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	e.I64(c.HalfOffset)
	e.U8(uint8(c.Decision))
	return e.B, e.Err
}

// TxnChecksCommand records check-backs about to be sent.
type TxnChecksCommand struct{ Checks []TxnCheck }

// Type implements dledger.Command.
func (*TxnChecksCommand) Type() dledger.CommandType { return CmdTxnChecks }

// AppendBody implements dledger.Command.
func (c *TxnChecksCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	e.Count(len(c.Checks))
	for _, k := range c.Checks {
		e.I64(k.HalfOffset)
		e.I32(k.Times)
		e.I64(k.AtMs)
	}
	return e.B, e.Err
}

func decodeTxnEnd(d *wire.Decoder) *TxnEndCommand {
	c := &TxnEndCommand{HalfOffset: d.I64(), Decision: TxnDecision(d.U8())}
	if d.Err == nil && (c.Decision < TxnCommitted || c.Decision > TxnDiscarded) {
		d.Err = errBadDecision
	}
	return c
}

func decodeTxnChecks(d *wire.Decoder) *TxnChecksCommand {
	n := d.Count(20)
	c := &TxnChecksCommand{Checks: make([]TxnCheck, 0, n)}
	for i := 0; i < n && d.Err == nil; i++ {
		off := d.I64()
		times := d.I32()
		c.Checks = append(c.Checks, TxnCheck{HalfOffset: off, Times: times, AtMs: d.I64()})
	}
	return c
}

// txnState is the transaction part of State. Caller holds State.mu.
type txnState struct {
	low     int64 // every half offset below is decided
	decided map[int64]TxnDecision
	checks  map[int64]TxnCheck
}

func newTxnState() txnState {
	return txnState{decided: map[int64]TxnDecision{}, checks: map[int64]TxnCheck{}}
}

func (t *txnState) end(c *TxnEndCommand) {
	if _, done := t.decided[c.HalfOffset]; done || c.HalfOffset < t.low {
		return // decided before: the leader never proposes it twice
	}
	t.decided[c.HalfOffset] = c.Decision
	delete(t.checks, c.HalfOffset)
	for {
		if _, ok := t.decided[t.low]; !ok {
			break
		}
		t.low++
	}
	for off := range t.decided {
		if off < t.low-txnKeepDecided {
			delete(t.decided, off)
		}
	}
}

func (t *txnState) check(c *TxnChecksCommand) {
	for _, k := range c.Checks {
		if _, done := t.decided[k.HalfOffset]; done || k.HalfOffset < t.low {
			continue
		}
		t.checks[k.HalfOffset] = k
	}
}

func (t *txnState) encode(e *wire.Encoder) {
	e.I64(t.low)
	offs := slices.Sorted(maps.Keys(t.decided))
	e.Count(len(offs))
	for _, off := range offs {
		e.I64(off)
		e.U8(uint8(t.decided[off]))
	}
	offs = slices.Sorted(maps.Keys(t.checks))
	e.Count(len(offs))
	for _, off := range offs {
		k := t.checks[off]
		e.I64(k.HalfOffset)
		e.I32(k.Times)
		e.I64(k.AtMs)
	}
}

func decodeTxnState(d *wire.Decoder) txnState {
	t := newTxnState()
	t.low = d.I64()
	for i, n := 0, d.Count(9); i < n && d.Err == nil; i++ {
		off := d.I64()
		t.decided[off] = TxnDecision(d.U8())
	}
	for _, k := range decodeTxnChecks(d).Checks {
		t.checks[k.HalfOffset] = k
	}
	return t
}

// TxnDecided reports whether the half at halfOffset is decided and how.
// A half decided long ago (more than 65,536 halves before the oldest
// undecided one) is reported decided with decision 0.
func (s *State) TxnDecided(halfOffset int64) (TxnDecision, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if d, ok := s.txn.decided[halfOffset]; ok {
		return d, true
	}
	return 0, halfOffset < s.txn.low
}

// TxnLow returns the oldest half offset that may be undecided.
func (s *State) TxnLow() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.txn.low
}

// TxnCheckOf returns an undecided half's check-back record (zero if it
// was never checked back).
func (s *State) TxnCheckOf(halfOffset int64) TxnCheck {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.txn.checks[halfOffset]
}
