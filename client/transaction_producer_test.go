package client

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

const txGroup = "pg-tx"

func execCommit(context.Context, *message.Message, any) TransactionState { return CommitTransaction }

func checkCommit(context.Context, *message.MessageExt) TransactionState { return CommitTransaction }

// logLines is a logger's output, kept for assertions and copied to t.Log.
type logLines struct {
	t  testing.TB
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.t.Log(string(p))
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// count is how many lines contain s.
func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func captureLogger(t testing.TB) (hclog.Logger, *logLines) {
	l := &logLines{t: t}
	return hclog.New(&hclog.LoggerOptions{Name: "client", Level: hclog.Warn, Output: l}), l
}

// startTx starts a transactional producer of txGroup on f and closes it at
// the end of the test.
func startTx(t *testing.T, f *txFake, exec TransactionExecutor, check TransactionChecker, opts ...TransactionProducerOpt) *TransactionProducer {
	t.Helper()
	opts = append([]TransactionProducerOpt{WithNameServers(f.ns.addr), WithLogger(testLogger(t))}, opts...)
	tp, err := NewTransactionProducer(txGroup, exec, check, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tp.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return tp
}

// wantEnd compares an END_TRANSACTION header with the one a transaction
// of msgID that ended in state must have sent.
func wantEnd(t *testing.T, got endCall, msgID string, state int32, oneway bool) {
	t.Helper()
	want := protocol.EndTransactionHeader{ProducerGroup: txGroup, TranStateTableOffset: fakeHalfQueueOffset,
		CommitLogOffset: fakeHalfCommitOffset, CommitOrRollback: state, FromTransactionCheck: false,
		MsgID: msgID, TransactionID: fakeTransactionID, BrokerName: "b"}
	if got.h != want || got.oneway != oneway {
		t.Errorf("END_TRANSACTION (oneway %v)\n got %+v\nwant %+v (oneway %v)", got.oneway, got.h, want, oneway)
	}
}

// TestTransactionEnds: the executor's commit, rollback and unknown each
// end the transaction with END_TRANSACTION to the leader, its header built
// from the send answer; the half message carried TRAN_MSG, PGROUP and the
// prepared sysFlag, the caller's message did not change but for its
// UNIQ_KEY and TransactionID.
func TestTransactionEnds(t *testing.T) {
	for _, c := range []struct {
		state  TransactionState
		wire   int32
		oneway bool
	}{
		{CommitTransaction, 8, false},
		{RollbackTransaction, 12, false},
		{UnknownTransaction, 0, true}, // RocketMQ brokers do not answer it
	} {
		t.Run(c.state.String(), func(t *testing.T) {
			f := startTxFake(t, 1)
			var seen *message.Message
			var seenArg any
			tp := startTx(t, f, func(_ context.Context, m *message.Message, arg any) TransactionState {
				seen, seenArg = m, arg
				return c.state
			}, checkCommit)
			msg := newMsg("T", "order 1")
			msg.SetTags("created")
			res, err := tp.SendMessageInTransaction(testCtx(t, 10*time.Second), msg, "arg-1")
			if err != nil {
				t.Fatal(err)
			}
			if res.State != c.state || res.EndErr != nil || res.Status != SendOK || res.MsgID == "" || res.MsgID != msg.UniqKey() ||
				res.QueueOffset != fakeHalfQueueOffset || res.TransactionID != fakeTransactionID {
				t.Fatalf("result %+v (end error %v), msg uniq key %q", res, res.EndErr, msg.UniqKey())
			}
			if seen != msg || seenArg != "arg-1" || msg.TransactionID != fakeTransactionID {
				t.Errorf("executor got %p %v, want %p arg-1; msg transaction id %q", seen, seenArg, msg, msg.TransactionID)
			}
			if msg.Property(message.PropertyTransactionPrepared) != "" || msg.Property(message.PropertyProducerGroup) != "" {
				t.Errorf("caller's message changed: %v", msg.Properties)
			}
			sends := f.nodes[0].sent()
			if len(sends) != 1 {
				t.Fatalf("%d sends", len(sends))
			}
			checkHalf(t, sends[0], msg.UniqKey(), 0)
			ends := f.nodes[0].waitEnds(t, 1)
			if len(ends) != 1 {
				t.Fatalf("%d END_TRANSACTIONs", len(ends))
			}
			wantEnd(t, ends[0], res.MsgID, c.wire, c.oneway)
		})
	}
}

// checkHalf checks a half message's send header: the group, TRAN_MSG,
// PGROUP, the message's UNIQ_KEY and the prepared bit besides extraFlags.
func checkHalf(t *testing.T, h protocol.SendMessageHeader, uniq string, extraFlags int32) {
	t.Helper()
	props, err := message.DecodeProperties([]byte(h.Properties))
	if err != nil {
		t.Fatal(err)
	}
	if h.ProducerGroup != txGroup || h.Batch || props[message.PropertyTransactionPrepared] != "true" ||
		props[message.PropertyProducerGroup] != txGroup || props[message.PropertyUniqKey] != uniq {
		t.Errorf("half message header %+v, properties %v", h, props)
	}
	if want := message.SysFlagTransactionPrepared | extraFlags; h.SysFlag != want {
		t.Errorf("half message sysFlag %#x, want %#x", h.SysFlag, want)
	}
}

// TestTransactionCompressedHalf: a compressed half message has both the
// compressed and the prepared bits.
func TestTransactionCompressedHalf(t *testing.T) {
	f := startTxFake(t, 1)
	tp := startTx(t, f, execCommit, checkCommit, WithCompressThreshold(16))
	msg := newMsg("T", strings.Repeat("compress me ", 10))
	if _, err := tp.SendMessageInTransaction(testCtx(t, 10*time.Second), msg, nil); err != nil {
		t.Fatal(err)
	}
	checkHalf(t, f.nodes[0].sent()[0], msg.UniqKey(), message.SysFlagCompressed)
}

// TestTransactionDegradedHalfRollsBack: a half stored with
// FLUSH_SLAVE_TIMEOUT runs no executor and is rolled back.
func TestTransactionDegradedHalfRollsBack(t *testing.T) {
	f := startTxFake(t, 1)
	f.nodes[0].script([]int16{remoting.ResFlushSlaveTimeout}, nil)
	var ran atomic.Bool
	tp := startTx(t, f, func(context.Context, *message.Message, any) TransactionState {
		ran.Store(true)
		return CommitTransaction
	}, checkCommit)
	res, err := tp.SendMessageInTransaction(testCtx(t, 10*time.Second), newMsg("T", "x"), nil)
	if err != nil || res.Status != SendFlushSlaveTimeout || res.State != RollbackTransaction || res.EndErr != nil {
		t.Fatalf("result %+v, error %v", res, err)
	}
	if ran.Load() {
		t.Error("executor ran on a degraded half")
	}
	ends := f.nodes[0].ended()
	if len(ends) != 1 {
		t.Fatalf("%d END_TRANSACTIONs", len(ends))
	}
	wantEnd(t, ends[0], res.MsgID, protocol.TransactionRollbackType, false)
}

// TestTransactionRefusedBeforeExecutor: a half send the broker refuses, an
// invalid or delayed message, a producer not started or closed: each
// returns an error, runs no executor and sends no END_TRANSACTION.
func TestTransactionRefusedBeforeExecutor(t *testing.T) {
	f := startTxFake(t, 1)
	f.nodes[0].script([]int16{remoting.ResMessageIllegal}, nil)
	var runs atomic.Int32
	exec := func(context.Context, *message.Message, any) TransactionState {
		runs.Add(1)
		return CommitTransaction
	}
	ctx := testCtx(t, 10*time.Second)
	idle, err := NewTransactionProducer(txGroup, exec, checkCommit, WithNameServers(f.ns.addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idle.SendMessageInTransaction(ctx, newMsg("T", "x"), nil); !errors.Is(err, ErrNotStarted) {
		t.Errorf("before Start: %v, want ErrNotStarted", err)
	}
	if err := idle.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tp := startTx(t, f, exec, checkCommit)
	_, err = tp.SendMessageInTransaction(ctx, newMsg("T", "x"), nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != remoting.ResMessageIllegal {
		t.Errorf("refused half: %v, want MESSAGE_ILLEGAL", err)
	}
	delayed := newMsg("T", "x")
	delayed.SetDelayLevel(3)
	timer := newMsg("T", "x")
	SetDeliverAt(timer, time.Now().Add(time.Minute))
	for name, m := range map[string]*message.Message{"nil": nil, "no body": newMsg("T", ""), "delayed": delayed, "timer": timer} {
		if _, err := tp.SendMessageInTransaction(ctx, m, nil); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("%s message: %v, want ErrInvalidMessage", name, err)
		}
	}
	if err := tp.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tp.SendMessageInTransaction(ctx, newMsg("T", "x"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	if err := tp.Start(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
	if runs.Load() != 0 || len(f.nodes[0].sent()) != 1 || len(f.nodes[0].ended()) != 0 {
		t.Errorf("%d executor runs, %d sends, %d END_TRANSACTIONs; want 0, 1, 0",
			runs.Load(), len(f.nodes[0].sent()), len(f.nodes[0].ended()))
	}
}

// TestTransactionExecutorFaults: an executor that panics, or returns no
// valid state, leaves the transaction unknown.
func TestTransactionExecutorFaults(t *testing.T) {
	for name, exec := range map[string]TransactionExecutor{
		"panic":     func(context.Context, *message.Message, any) TransactionState { panic("local transaction blew up") },
		"bad state": func(context.Context, *message.Message, any) TransactionState { return TransactionState(99) },
	} {
		t.Run(name, func(t *testing.T) {
			f := startTxFake(t, 1)
			tp := startTx(t, f, exec, checkCommit)
			res, err := tp.SendMessageInTransaction(testCtx(t, 10*time.Second), newMsg("T", "x"), nil)
			if err != nil || res.State != UnknownTransaction || res.EndErr != nil {
				t.Fatalf("result %+v, error %v", res, err)
			}
			wantEnd(t, f.nodes[0].waitEnds(t, 1)[0], res.MsgID, protocol.TransactionNotType, true)
		})
	}
}

// TestTransactionEndFailover: END_TRANSACTION the leader refuses
// (SERVICE_NOT_AVAILABLE) or cannot take (it is down) goes to the other
// node of the group, and the result has no EndErr.
func TestTransactionEndFailover(t *testing.T) {
	for _, c := range []struct {
		name string
		down bool
	}{{"refused", false}, {"down", true}} {
		t.Run(c.name, func(t *testing.T) {
			f := startTxFake(t, 2)
			f.nodes[0].script(nil, []int16{remoting.ResServiceNotAvailable})
			tp := startTx(t, f, func(context.Context, *message.Message, any) TransactionState {
				if c.down {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					_ = f.nodes[0].srv.Shutdown(ctx)
				}
				return CommitTransaction
			}, checkCommit)
			res, err := tp.SendMessageInTransaction(testCtx(t, 10*time.Second), newMsg("T", "x"), nil)
			if err != nil || res.EndErr != nil || res.State != CommitTransaction {
				t.Fatalf("result %+v (end error %v), error %v", res, res.EndErr, err)
			}
			leader, other := f.nodes[0].ended(), f.nodes[1].ended()
			if want := map[bool]int{false: 1, true: 0}[c.down]; len(leader) != want || len(other) != 1 {
				t.Fatalf("END_TRANSACTIONs: %d at the leader (want %d), %d at the other node (want 1)", len(leader), want, len(other))
			}
			if !c.down && leader[0].answer != remoting.ResServiceNotAvailable {
				t.Errorf("leader answered %d", leader[0].answer)
			}
			wantEnd(t, other[0], res.MsgID, protocol.TransactionCommitType, false)
		})
	}
}

// TestTransactionEndUndelivered: EndErr is set when no node takes
// END_TRANSACTION: every node failing over until the send timeout, or one
// refusing it for good at once. The half send succeeded: no error.
func TestTransactionEndUndelivered(t *testing.T) {
	t.Run("every node failing", func(t *testing.T) {
		f := startTxFake(t, 2)
		failing := make([]int16, 1000)
		for i := range failing {
			failing[i] = remoting.ResSystemError
		}
		f.nodes[0].script(nil, failing)
		f.nodes[1].script(nil, failing)
		tp := startTx(t, f, execCommit, checkCommit, WithSendTimeout(600*time.Millisecond))
		start := time.Now()
		res, err := tp.SendMessageInTransaction(testCtx(t, 10*time.Second), newMsg("T", "x"), nil)
		var e *Error
		if err != nil || res.State != CommitTransaction || !errors.As(res.EndErr, &e) || e.Code != remoting.ResSystemError {
			t.Fatalf("result %+v (end error %v), error %v", res, res.EndErr, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %v with a send timeout of 600 ms", d)
		}
		if a, b := len(f.nodes[0].ended()), len(f.nodes[1].ended()); a == 0 || b == 0 {
			t.Errorf("END_TRANSACTION tried %d times at the leader, %d at the other node; want both", a, b)
		}
	})
	t.Run("refused", func(t *testing.T) {
		f := startTxFake(t, 2)
		f.nodes[0].script(nil, []int16{remoting.ResTransactionFailed})
		tp := startTx(t, f, execCommit, checkCommit)
		res, err := tp.SendMessageInTransaction(testCtx(t, 10*time.Second), newMsg("T", "x"), nil)
		var e *Error
		if err != nil || !errors.As(res.EndErr, &e) || e.Code != remoting.ResTransactionFailed {
			t.Fatalf("result %+v (end error %v), error %v", res, res.EndErr, err)
		}
		if a, b := len(f.nodes[0].ended()), len(f.nodes[1].ended()); a != 1 || b != 0 {
			t.Errorf("END_TRANSACTION sent %d times to the leader, %d to the other node; want 1, 0", a, b)
		}
	})
}

// TestTransactionCloseWaits: Close waits for a transaction in progress
// until its context ends, and the transaction's END_TRANSACTION then
// fails (EndErr), the half message having been sent.
func TestTransactionCloseWaits(t *testing.T) {
	f := startTxFake(t, 1)
	running, release := make(chan struct{}), make(chan struct{})
	tp := startTx(t, f, func(context.Context, *message.Message, any) TransactionState {
		close(running)
		<-release
		return CommitTransaction
	}, checkCommit)
	type outcome struct {
		res TransactionSendResult
		err error
	}
	done := make(chan outcome)
	go func() {
		res, err := tp.SendMessageInTransaction(testCtx(t, 10*time.Second), newMsg("T", "x"), nil)
		done <- outcome{res, err}
	}()
	<-running
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tp.Close(expired); !errors.Is(err, context.Canceled) {
		t.Errorf("Close with a transaction running and an expired context: %v", err)
	}
	close(release)
	o := <-done
	if o.err != nil || o.res.EndErr == nil {
		t.Errorf("transaction cut by Close: result %+v, error %v; want an EndErr", o.res, o.err)
	}
}
