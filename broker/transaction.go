package broker

// Transactions, as RocketMQ 4.x, replicated. A send whose TRAN_MSG
// property is "true" is a half message: it is stored in
// RMQ_SYS_TRANS_HALF_TOPIC queue 0 with its own topic and queue in
// REAL_TOPIC/REAL_QID, __transactionId__ set to its UNIQ_KEY and the
// prepared bit cleared, so no consumer sees it (parker.park).
//
// END_TRANSACTION (37) decides it, on the leader (a follower forwards):
// commit stores the real message on its topic (original properties,
// queue, UNIQ_KEY, sysFlag commit; DELAY and timers apply now), rollback
// stores nothing; both store an op record in RMQ_SYS_TRANS_OP_HALF_TOPIC
// (body: the half's queue offset, tag "d") and carry the decision as the
// put's side command (meta.TxnEndCommand), so the decision and its effect
// commit together. A leader decides a half only after a barrier in its
// term, under a per-half lock, and pins the put to that term: a decision
// is made once, whatever fails over. Answers: SUCCESS (also for a repeat
// of the decision already made, and for "unknown", which leaves the half
// to the check-back); SYSTEM_ERROR with a remark for a header that does
// not name a half message of this group ("The producer group wrong", as
// RocketMQ), a conflicting decision (commit after rollback) or a
// transaction id that is not the half's; the usual proposal failures.
//
// The check-back (transaction_check.go) asks a producer of the group about
// halves left undecided.
//
// Not done: RocketMQ's rejectCommitOrRollback (ILLEGAL_OPERATION for a
// producer's own late decision once CHECK_IMMUNITY_TIME passed); a late
// decision is taken here if the half is still undecided.

import (
	"context"
	"errors"
	"hash/maphash"
	"strconv"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wallclock"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

// opDeleteTag is the tag of an op record (RocketMQ's REMOVETAG).
const opDeleteTag = "d"

// txnLockStripes is how many locks serialise decisions of halves.
const txnLockStripes = 64

// isHalf reports whether a message being sent is a transaction half.
func isHalf(m *message.MessageExt) bool {
	return m.Property(message.PropertyTransactionPrepared) == "true"
}

// parkHalf turns m into its half message in the half topic.
func parkHalf(m *message.MessageExt) {
	if u := m.UniqKey(); u != "" {
		m.SetProperty(message.PropertyTransactionID, u)
	}
	m.SetProperty(message.PropertyRealTopic, m.Topic)
	m.SetProperty(message.PropertyRealQueueID, strconv.Itoa(int(m.QueueID)))
	m.SysFlag = message.SetTransactionValue(m.SysFlag, 0)
	m.Topic, m.QueueID = protocol.TransHalfTopic, 0
}

// txnService decides half messages.
type txnService struct {
	rep     *replica
	store   *store.Store
	meta    *meta.State
	records *recordBuilder
	log     hclog.Logger

	locks [txnLockStripes]sync.Mutex
	seed  maphash.Seed
}

func newTxnService(rep *replica, st *store.Store, md *meta.State, records *recordBuilder, log hclog.Logger) *txnService {
	return &txnService{rep: rep, store: st, meta: md, records: records, log: log, seed: maphash.MakeSeed()}
}

func (t *txnService) register(m mux) {
	m.HandleFunc(remoting.ReqEndTransaction, t.rep.leaderOnly(t.endTransaction))
}

// lock serialises the decisions of one half.
func (t *txnService) lock(halfOffset int64) func() {
	var b [8]byte
	for i := range b {
		b[i] = byte(halfOffset >> (8 * i))
	}
	mu := &t.locks[maphash.Bytes(t.seed, b[:])%txnLockStripes]
	mu.Lock()
	return mu.Unlock
}

// half is a half message as END_TRANSACTION and the check-back see it.
type half struct {
	offset int64 // queue offset in the half topic
	m      *message.MessageExt
}

// readHalf reads the half message at commit offset co and checks it is one.
func (t *txnService) readHalf(co int64) (*half, error) {
	rec, err := t.store.ReadRecord(co)
	if err != nil {
		return nil, err
	}
	m, _, err := message.DecodeExt(rec)
	if err != nil {
		return nil, err
	}
	if m.Topic != protocol.TransHalfTopic {
		return nil, errNotHalf
	}
	return &half{offset: m.QueueOffset, m: m}, nil
}

var errNotHalf = errors.New("the message at that commit log offset is not a transaction half message")

func (t *txnService) endTransaction(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := protocol.DecodeEndTransactionHeader(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "bad end transaction header: %v", err)
	}
	decision, ok := decisionOf(h.CommitOrRollback)
	if !ok {
		if h.CommitOrRollback == protocol.TransactionNotType {
			return okResponse(req) // unknown: the check-back will ask again
		}
		return errResponse(req, remoting.ResSystemError, "commitOrRollback %d is not 0, 8 or 12", h.CommitOrRollback)
	}
	term, err := t.rep.ready(ctx)
	if err != nil {
		return t.rep.proposeFailure(ctx, req, err)
	}
	hf, resp := t.checkHalf(req, h)
	if resp != nil {
		return resp
	}
	unlock := t.lock(hf.offset)
	defer unlock()
	if done, how := t.meta.TxnDecided(hf.offset); how {
		return decidedAnswer(req, hf.offset, done, decision)
	}
	if err := t.decide(ctx, term, hf, decision); err != nil {
		return t.rep.proposeFailure(ctx, req, err)
	}
	if h.FromTransactionCheck {
		t.log.Info("transaction decided by check-back", "half", hf.offset, "decision", decision, "msg_id", h.MsgID)
	}
	return okResponse(req)
}

func decisionOf(commitOrRollback int32) (meta.TxnDecision, bool) {
	switch commitOrRollback {
	case protocol.TransactionCommitType:
		return meta.TxnCommitted, true
	case protocol.TransactionRollbackType:
		return meta.TxnRolledBack, true
	}
	return 0, false
}

// checkHalf finds the half message the header names and checks that it
// belongs to the header's group and transaction, as RocketMQ's
// checkPrepareMessage.
func (t *txnService) checkHalf(req *remoting.Command, h protocol.EndTransactionHeader) (*half, *remoting.Command) {
	hf, err := t.readHalf(h.CommitLogOffset)
	if err != nil {
		return nil, errResponse(req, remoting.ResSystemError, "Find prepared transaction message failed: commit log offset %d: %v", h.CommitLogOffset, err)
	}
	m := hf.m
	switch {
	case m.Property(message.PropertyProducerGroup) != h.ProducerGroup:
		return nil, errResponse(req, remoting.ResSystemError, "The producer group wrong: half message %d belongs to %q, not %q",
			hf.offset, m.Property(message.PropertyProducerGroup), h.ProducerGroup)
	case hf.offset != h.TranStateTableOffset:
		return nil, errResponse(req, remoting.ResSystemError, "The transaction state table offset wrong: %d, the half message is at %d",
			h.TranStateTableOffset, hf.offset)
	case h.TransactionID != "" && h.TransactionID != m.UniqKey() && h.TransactionID != m.Property(message.PropertyTransactionID):
		return nil, errResponse(req, remoting.ResSystemError, "transaction id %q is not the half message's (%q)", h.TransactionID, m.UniqKey())
	}
	return hf, nil
}

// decidedAnswer answers a decision for a half already decided: SUCCESS
// when it repeats it, SYSTEM_ERROR when it contradicts it.
func decidedAnswer(req *remoting.Command, offset int64, done, asked meta.TxnDecision) *remoting.Command {
	switch done {
	case 0:
		return remoting.NewResponse(req, remoting.ResSuccess, "transaction already decided")
	case asked:
		return remoting.NewResponse(req, remoting.ResSuccess, "transaction already "+asked.String())
	}
	return errResponse(req, remoting.ResSystemError, "transaction of half message %d is already %s; %s refused", offset, done, asked)
}

// decide commits the decision and its effect as one entry of term.
func (t *txnService) decide(ctx context.Context, term uint64, hf *half, d meta.TxnDecision) error {
	var msgs []dledger.Message
	switch d {
	case meta.TxnCommitted:
		real, err := t.realMessage(hf)
		if err != nil {
			return err
		}
		msgs = append(msgs, real)
	case meta.TxnDiscarded:
		aside, err := t.discardedMessage(hf)
		if err != nil {
			return err
		}
		msgs = append(msgs, aside)
	}
	op, err := t.opRecord(hf)
	if err != nil {
		return err
	}
	msgs = append(msgs, op)
	pctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	_, err = t.rep.propose(pctx, &dledger.PutMessagesCommand{Messages: msgs, Term: term,
		With: []dledger.Command{&meta.TxnEndCommand{HalfOffset: hf.offset, Decision: d}}})
	return err
}

// realMessage is the committed message: the half restored to its topic
// and queue, the prepared property removed, sysFlag commit.
func (t *txnService) realMessage(hf *half) (dledger.Message, error) {
	m := cloneExt(hf.m)
	qid, err := strconv.Atoi(m.Property(message.PropertyRealQueueID))
	if err != nil {
		return dledger.Message{}, errNotHalf
	}
	m.Topic, m.QueueID = m.Property(message.PropertyRealTopic), int32(qid)
	m.RemoveProperty(message.PropertyRealTopic)
	m.RemoveProperty(message.PropertyRealQueueID)
	m.RemoveProperty(message.PropertyTransactionPrepared)
	m.SysFlag = message.SetTransactionValue(m.SysFlag, message.SysFlagTransactionCommit)
	m.PreparedTransactionOffset = hf.m.CommitLogOffset
	m.StoreHost, m.StoreTimestamp = t.records.storeHost, 0
	return t.records.parked(m, wallclock.Now())
}

// discardedMessage is a half that ran out of check-backs, moved to
// TRANS_CHECK_MAX_TIME_TOPIC for an operator (REAL_TOPIC kept).
func (t *txnService) discardedMessage(hf *half) (dledger.Message, error) {
	m := cloneExt(hf.m)
	m.Topic, m.QueueID, m.StoreTimestamp = protocol.TransCheckMaxTimeTopic, 0, 0
	return t.records.stored(m)
}

// opRecord is the op record of a decided half, as RocketMQ writes it.
func (t *txnService) opRecord(hf *half) (dledger.Message, error) {
	m := &message.MessageExt{
		Message:   message.Message{Topic: protocol.TransOpHalfTopic, Body: []byte(strconv.FormatInt(hf.offset, 10)), Properties: map[string]string{}},
		BornHost:  hf.m.StoreHost,
		StoreHost: t.records.storeHost,
	}
	m.SetTags(opDeleteTag)
	m.BornTimestamp = wallclock.UnixMilli()
	return t.records.stored(m)
}

// cloneExt copies a decoded message so its properties can change.
func cloneExt(m *message.MessageExt) *message.MessageExt {
	c := *m
	c.Properties = make(map[string]string, len(m.Properties))
	for k, v := range m.Properties {
		c.Properties[k] = v
	}
	return &c
}
