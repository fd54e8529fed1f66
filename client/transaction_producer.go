package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// TransactionState is the outcome of a local transaction, as a
// TransactionExecutor or TransactionChecker reports it (RocketMQ's
// LocalTransactionState).
type TransactionState int

// Transaction states. The zero value is UnknownTransaction, so that a
// state never set never commits.
const (
	// UnknownTransaction leaves the half message in doubt: the broker
	// asks the group's producers later (the TransactionChecker).
	UnknownTransaction TransactionState = iota
	// CommitTransaction delivers the message to its topic.
	CommitTransaction
	// RollbackTransaction discards it.
	RollbackTransaction
)

// String returns RocketMQ's name of the state (UNKNOW, sic).
func (s TransactionState) String() string {
	switch s {
	case CommitTransaction:
		return "COMMIT_MESSAGE"
	case RollbackTransaction:
		return "ROLLBACK_MESSAGE"
	case UnknownTransaction:
		return "UNKNOW"
	}
	return "TransactionState(" + strconv.Itoa(int(s)) + ")"
}

// wire is END_TRANSACTION's commitOrRollback for s.
func (s TransactionState) wire() int32 {
	switch s {
	case CommitTransaction:
		return protocol.TransactionCommitType
	case RollbackTransaction:
		return protocol.TransactionRollbackType
	}
	return protocol.TransactionNotType
}

// TransactionExecutor runs the local transaction of a half message that
// the broker stored, on the goroutine of SendMessageInTransaction, with
// its ctx and arg. msg is the message sent, with its UNIQ_KEY and its
// TransactionID (the broker's transaction id, else the UNIQ_KEY) set.
type TransactionExecutor func(ctx context.Context, msg *message.Message, arg any) TransactionState

// TransactionChecker reports the state of a local transaction the broker
// holds in doubt: one whose END_TRANSACTION did not arrive or said
// UnknownTransaction. msg is the half message as stored, its body
// decompressed and its TransactionID set; its UNIQ_KEY (msg.UniqKey())
// is the one SendMessageInTransaction's result gave as MsgID. ctx ends
// when the producer closes. See WithCheckWorkers for concurrency.
type TransactionChecker func(ctx context.Context, msg *message.MessageExt) TransactionState

// TransactionSendResult is the result of SendMessageInTransaction: the
// half message's send result (its MsgID is the message's, its QueueOffset
// the half's offset in the broker's half topic) and the state sent in
// END_TRANSACTION.
type TransactionSendResult struct {
	SendResult
	// State is the executor's decision, or RollbackTransaction when the
	// half was stored with a status other than SendOK (the executor did
	// not run), as the official clients do.
	State TransactionState
	// EndErr is why END_TRANSACTION could not be delivered within the
	// send timeout; the broker's check-back (the TransactionChecker) then
	// decides the transaction. Nil when it was delivered.
	EndErr error
}

// TransactionProducer sends RocketMQ 4.x transactional messages: a half
// message the broker holds from consumers, a local transaction, then
// END_TRANSACTION committing or rolling it back; a transaction left
// undecided is asked about later by the broker (CHECK_TRANSACTION_STATE)
// and answered by the checker. Create it with NewTransactionProducer, call
// Start, then call SendMessageInTransaction from any number of
// goroutines; Close when done. It heartbeats the brokers as a producer of
// its group, which is how they find it for check-backs; any producer of
// the group may be asked about any of the group's transactions.
type TransactionProducer struct {
	p       *Producer
	group   string
	log     hclog.Logger
	execute TransactionExecutor
	check   TransactionChecker
	workers int
	checks  chan checkRequest
	// checkCtx is the checkers' context, cancelled by Close.
	checkCtx   context.Context
	stopChecks context.CancelFunc
	checkers   sync.WaitGroup
	inflight   sync.WaitGroup // transactions in SendMessageInTransaction

	mu      sync.Mutex
	started bool
	closed  bool
}

// NewTransactionProducer returns a transactional producer of group: execute
// runs each local transaction, check answers the brokers' check-backs.
// Every ProducerOpt applies (WithSendTimeout bounds the half message's
// send and, separately, its END_TRANSACTION), as does WithCheckWorkers. A
// nil execute or check, or an empty or invalid group, is an
// ErrInvalidOption. It does no I/O.
func NewTransactionProducer(group string, execute TransactionExecutor, check TransactionChecker, opts ...TransactionProducerOpt) (*TransactionProducer, error) {
	if execute == nil || check == nil {
		return nil, fmt.Errorf("%w: a transaction producer needs an executor and a checker", ErrInvalidOption)
	}
	cfg, err := newTxConfig(group, opts)
	if err != nil {
		return nil, err
	}
	p, err := newProducer(&cfg.producerConfig)
	if err != nil {
		return nil, err
	}
	tp := &TransactionProducer{p: p, group: group, log: p.c.log.Named("transaction"), execute: execute, check: check,
		workers: cfg.checkWorkers, checks: make(chan checkRequest, CheckQueueSize)}
	tp.checkCtx, tp.stopChecks = context.WithCancel(context.Background())
	p.c.handle(remoting.ReqCheckTransactionState, tp.onCheck)
	return tp, nil
}

// ClientID is the producer's client id (ip@instance).
func (tp *TransactionProducer) ClientID() string { return tp.p.ClientID() }

// Start starts the route refresh and heartbeat loops and the check-back
// workers. It checks that a name server answers and fails
// (ErrNoNameServer) if none does.
func (tp *TransactionProducer) Start(ctx context.Context) error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.closed {
		return ErrClosed
	}
	if tp.started {
		return nil
	}
	if err := tp.p.Start(ctx); err != nil {
		return err
	}
	for range tp.workers {
		tp.checkers.Add(1)
		go tp.checkLoop()
	}
	tp.started = true
	return nil
}

// Close waits for the transactions in SendMessageInTransaction and the
// running checks (until ctx is done; the checkers' context is cancelled
// at once), drops the checks still queued (the broker asks again), then
// closes the producer. Calls after Close fail with ErrClosed.
func (tp *TransactionProducer) Close(ctx context.Context) error {
	tp.mu.Lock()
	if tp.closed {
		tp.mu.Unlock()
		return nil
	}
	tp.closed = true
	tp.mu.Unlock()
	tp.stopChecks()
	done := make(chan struct{})
	go func() { tp.inflight.Wait(); tp.checkers.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("client: close: transactions or checks still running: %w", ctx.Err())
	}
	return errors.Join(err, tp.p.Close(ctx))
}

// enter counts one transaction in, so Close waits for it.
func (tp *TransactionProducer) enter() error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	switch {
	case tp.closed:
		return ErrClosed
	case !tp.started:
		return ErrNotStarted
	}
	tp.inflight.Add(1)
	return nil
}

// SendMessageInTransaction sends msg as a half message, runs the executor
// with arg once the broker has stored it, and ends the transaction with
// the executor's decision (END_TRANSACTION to the leader of the broker
// group that stored the half, failed over like a send and bounded by ctx
// and a send timeout of its own). A send that fails returns its error and
// runs no executor; once the half is stored the error is nil and the
// result's EndErr says whether END_TRANSACTION was delivered. A panic in
// the executor is recovered as UnknownTransaction (logged).
//
// msg is a single message (no batches) without a delay level or timer
// delivery (ErrInvalidMessage): the broker delays the half by its own
// check-back schedule. msg gets a UNIQ_KEY if absent and its TransactionID
// (see TransactionExecutor); its properties are not changed, the half
// carries TRAN_MSG and PGROUP besides.
func (tp *TransactionProducer) SendMessageInTransaction(ctx context.Context, msg *message.Message, arg any) (TransactionSendResult, error) {
	if err := tp.enter(); err != nil {
		return TransactionSendResult{}, err
	}
	defer tp.inflight.Done()
	pm, err := tp.prepareHalf(msg)
	if err != nil {
		return TransactionSendResult{}, err
	}
	start := time.Now()
	res, err := tp.p.send(ctx, pm)
	tp.p.trace.pub(tp.p.cfg.group, []*message.Message{msg}, start, res, err, traceHalfMsg)
	if err != nil {
		return TransactionSendResult{}, err
	}
	state := RollbackTransaction
	if res.Status == SendOK {
		msg.TransactionID = res.TransactionID
		if msg.TransactionID == "" {
			msg.TransactionID = res.MsgID
		}
		state = tp.runExecutor(ctx, msg, arg)
	} else {
		tp.log.Warn("half message stored with a degraded status: rolling back", "msgId", res.MsgID, "status", res.Status)
	}
	return TransactionSendResult{SendResult: res, State: state, EndErr: tp.end(ctx, res, state)}, nil
}

// prepareHalf validates msg and prepares its half message: a copy with
// TRAN_MSG and PGROUP, sent with the prepared bit of sysFlag.
func (tp *TransactionProducer) prepareHalf(msg *message.Message) (*prepared, error) {
	if err := checkMessage(msg, tp.p.cfg.maxMessageSize); err != nil {
		return nil, err
	}
	if msg.DelayLevel() > 0 || msg.Property(message.PropertyTimerDeliverMS) != "" || msg.Property(message.PropertyTimerDelaySec) != "" {
		return nil, fmt.Errorf("%w: a transactional message cannot be delayed", ErrInvalidMessage)
	}
	if msg.UniqKey() == "" {
		msg.SetUniqKey(tp.p.uniq.Next())
	}
	half := *msg
	half.Properties = maps.Clone(msg.Properties)
	half.SetProperty(message.PropertyTransactionPrepared, "true")
	half.SetProperty(message.PropertyProducerGroup, tp.group)
	pm, err := tp.p.prepare(&half)
	if err != nil {
		return nil, err
	}
	pm.sysFlag = message.SetTransactionValue(pm.sysFlag, message.SysFlagTransactionPrepared)
	return pm, nil
}

// runExecutor runs the executor, a panic or a state out of range counting
// as UnknownTransaction.
func (tp *TransactionProducer) runExecutor(ctx context.Context, msg *message.Message, arg any) (state TransactionState) {
	defer func() {
		if r := recover(); r != nil {
			tp.log.Error("transaction executor panicked: state unknown, the broker will check back",
				"msgId", msg.UniqKey(), "panic", r, "stack", string(debug.Stack()))
			state = UnknownTransaction
		}
	}()
	return tp.valid(tp.execute(ctx, msg, arg), "executor", msg.UniqKey())
}

// valid returns s, or UnknownTransaction (logged) if s is not a state.
func (tp *TransactionProducer) valid(s TransactionState, who, msgID string) TransactionState {
	switch s {
	case CommitTransaction, RollbackTransaction, UnknownTransaction:
		return s
	}
	tp.log.Error("transaction "+who+" returned no state: counted as unknown", "msgId", msgID, "state", s)
	return UnknownTransaction
}

// end sends END_TRANSACTION for the half message res describes, with the
// retries and failover of a send. Commit and rollback go as requests, so
// that a refusal is seen; unknown goes oneway, because RocketMQ brokers
// do not answer it.
func (tp *TransactionProducer) end(ctx context.Context, res SendResult, state TransactionState) error {
	_, commitOffset, err := message.DecodeOffsetMsgID(res.OffsetMsgID)
	if err != nil {
		return fmt.Errorf("client: END_TRANSACTION for %s: the send answer's offsetMsgId: %w", res.MsgID, err)
	}
	h := protocol.EndTransactionHeader{
		ProducerGroup: tp.group, TranStateTableOffset: res.QueueOffset, CommitLogOffset: commitOffset,
		CommitOrRollback: state.wire(), MsgID: res.MsgID, TransactionID: res.TransactionID,
		BrokerName: res.Queue.BrokerName,
	}
	broker := res.Queue.BrokerName
	_, err = tp.p.retry(ctx, "END_TRANSACTION for", res.Queue.Topic, func(actx context.Context, _ string) (string, error) {
		return broker, tp.endOnce(actx, res.Queue.Topic, broker, h, state == UnknownTransaction)
	})
	if err != nil {
		tp.log.Warn("END_TRANSACTION not delivered: the broker will check back", "msgId", res.MsgID, "state", state, "error", err)
	}
	return err
}

// endOnce sends END_TRANSACTION once, to the leader of broker (or, while
// that is suspected dead, another node of its group), found in topic's
// route, else among the groups seen.
func (tp *TransactionProducer) endOnce(ctx context.Context, topic, broker string, h protocol.EndTransactionHeader, oneway bool) error {
	p := tp.p
	route, err := p.c.routes.get(ctx, topic)
	if err != nil {
		return err
	}
	bd, ok := route.Broker(broker)
	if !ok {
		bd, ok = p.c.routes.brokerGroup(broker)
	}
	addr, err := p.pickGroupAddr(bd, ok, broker)
	if err != nil {
		return err
	}
	req := remoting.NewRequest(remoting.ReqEndTransaction, h.Ext(), nil)
	req.SerializeType = remoting.SerializeRocketMQ
	if oneway {
		p.c.sign(req)
		if err = p.c.remote.InvokeOneway(ctx, addr, req); err != nil {
			err = fmt.Errorf("client: oneway END_TRANSACTION at %s: %w", addr, err)
		}
	} else {
		_, err = p.c.call(ctx, addr, req)
	}
	p.suspectOn(addr, err)
	return err
}
