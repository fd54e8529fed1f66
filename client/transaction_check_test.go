package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

func execUnknown(context.Context, *message.Message, any) TransactionState { return UnknownTransaction }

// connect makes tp known to every node of f (a route fetch heartbeats the
// group's nodes): one transaction left unknown, which the fake records as
// an END_TRANSACTION at the leader.
func connect(t *testing.T, f *txFake, tp *TransactionProducer) {
	t.Helper()
	if _, err := tp.SendMessageInTransaction(testCtx(t, 10*time.Second), newMsg("T", "x"), nil); err != nil {
		t.Fatal(err)
	}
	f.nodes[0].waitEnds(t, 1)
	for _, n := range f.nodes {
		hb := n.waitClient(t)
		if hb.ClientID != tp.ClientID() || len(hb.ProducerDataSet) != 1 || hb.ProducerDataSet[0].GroupName != txGroup {
			t.Fatalf("node %d: heartbeat %+v, want producer group %s", n.id, hb, txGroup)
		}
	}
}

// checkHeader is a check-back's header for a half at queue offset 9,
// commit offset 777.
func checkHeader(msgID, txID string) protocol.CheckTransactionStateHeader {
	return protocol.CheckTransactionStateHeader{TranStateTableOffset: 9, CommitLogOffset: 777, MsgID: msgID,
		TransactionID: txID, OffsetMsgID: message.EncodeOffsetMsgID(fakeStoreHost, 777)}
}

// TestTransactionCheckBack: a check-back from a node that is not the
// route's leader runs the checker and is answered at that node with
// END_TRANSACTION from the check: the header's offsets, the message's
// UNIQ_KEY (else its offsetMsgId) and transaction id (the
// __transactionId__ property, else the header's).
func TestTransactionCheckBack(t *testing.T) {
	f := startTxFake(t, 2)
	var mu sync.Mutex
	checked := map[string]*message.MessageExt{}
	tp := startTx(t, f, execUnknown, func(_ context.Context, m *message.MessageExt) TransactionState {
		mu.Lock()
		defer mu.Unlock()
		checked[m.UniqKey()] = m
		if m.UniqKey() == "U1" {
			return CommitTransaction
		}
		return RollbackTransaction
	})
	connect(t, f, tp)

	withProp := halfMessage(txGroup, "U1")
	withProp.SetProperty(message.PropertyTransactionID, "prop-tx")
	f.nodes[1].check(t, checkHeader("U1", "hdr-tx"), withProp)
	noUniq := halfMessage(txGroup, "")
	f.nodes[1].check(t, checkHeader("", "hdr-tx-2"), noUniq)

	ends := f.nodes[1].waitEnds(t, 2)
	byMsg := map[string]endCall{}
	for _, e := range ends {
		byMsg[e.h.MsgID] = e
	}
	for _, c := range []struct {
		msgID, txID string
		state       int32
	}{{"U1", "prop-tx", protocol.TransactionCommitType}, {noUniq.MsgID(), "hdr-tx-2", protocol.TransactionRollbackType}} {
		want := protocol.EndTransactionHeader{ProducerGroup: txGroup, TranStateTableOffset: 9, CommitLogOffset: 777,
			CommitOrRollback: c.state, FromTransactionCheck: true, MsgID: c.msgID, TransactionID: c.txID}
		if got := byMsg[c.msgID]; got.h != want || got.oneway {
			t.Errorf("check answer (oneway %v)\n got %+v\nwant %+v", got.oneway, got.h, want)
		}
	}
	if n := len(f.nodes[0].ended()); n != 1 {
		t.Errorf("the leader got %d END_TRANSACTIONs, want only the first transaction's", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if m := checked["U1"]; m == nil || string(m.Body) != "half" || m.TransactionID != "prop-tx" || m.CommitLogOffset != 777 {
		t.Errorf("checker got %+v", m)
	}
	if m := checked[""]; m == nil || m.TransactionID != "hdr-tx-2" {
		t.Errorf("checker got %+v for the message without UNIQ_KEY", m)
	}
}

// TestTransactionCheckFaults: a checker that panics answers unknown
// (oneway); a check for another producer group runs no checker and is
// not answered.
func TestTransactionCheckFaults(t *testing.T) {
	f := startTxFake(t, 1)
	log, lines := captureLogger(t)
	var checks atomic.Int32
	tp := startTx(t, f, execUnknown, func(context.Context, *message.MessageExt) TransactionState {
		checks.Add(1)
		panic("checker blew up")
	}, WithLogger(log))
	connect(t, f, tp)

	f.nodes[0].check(t, checkHeader("OTHER", "tx"), halfMessage("another-group", "OTHER"))
	eventually(t, 5*time.Second, func() error {
		if lines.count("check-back for another producer group") != 1 {
			return fmt.Errorf("no log of the ignored check")
		}
		return nil
	})
	f.nodes[0].check(t, checkHeader("U2", "tx-2"), halfMessage(txGroup, "U2"))
	ends := f.nodes[0].waitEnds(t, 2)
	want := protocol.EndTransactionHeader{ProducerGroup: txGroup, TranStateTableOffset: 9, CommitLogOffset: 777,
		CommitOrRollback: protocol.TransactionNotType, FromTransactionCheck: true, MsgID: "U2", TransactionID: "tx-2"}
	if len(ends) != 2 || ends[1].h != want || !ends[1].oneway {
		t.Fatalf("END_TRANSACTIONs %+v, want the first transaction's and %+v oneway", ends, want)
	}
	if checks.Load() != 1 || lines.count("transaction checker panicked") != 1 {
		t.Errorf("checker ran %d times (want 1), panic logged %d times", checks.Load(), lines.count("transaction checker panicked"))
	}
}

// TestTransactionCheckQueueFull: with one worker busy and CheckQueueSize
// checks waiting, one more check is dropped (logged); the others are all
// answered once the worker is free.
func TestTransactionCheckQueueFull(t *testing.T) {
	f := startTxFake(t, 1)
	log, lines := captureLogger(t)
	var checks atomic.Int32
	busy, release := make(chan struct{}), make(chan struct{})
	tp := startTx(t, f, execUnknown, func(_ context.Context, m *message.MessageExt) TransactionState {
		if checks.Add(1) == 1 {
			close(busy)
			<-release
		}
		return UnknownTransaction
	}, WithLogger(log), WithCheckWorkers(1))
	connect(t, f, tp)

	f.nodes[0].check(t, checkHeader("first", ""), halfMessage(txGroup, "first"))
	<-busy
	// In bursts well under the 64 handlers a connection runs at once: the
	// remoting layer refuses more at once, before the queue sees them.
	for i := range CheckQueueSize + 1 {
		id := fmt.Sprintf("U%d", i)
		f.nodes[0].check(t, checkHeader(id, ""), halfMessage(txGroup, id))
		if sent := i + 1; sent%32 == 0 && sent <= CheckQueueSize {
			eventually(t, 5*time.Second, func() error {
				if n := len(tp.checks); n != sent {
					return fmt.Errorf("%d checks queued of %d sent", n, sent)
				}
				return nil
			})
		}
	}
	eventually(t, 10*time.Second, func() error {
		if n := lines.count("check-back queue full"); n != 1 {
			return fmt.Errorf("%d checks dropped, want 1", n)
		}
		return nil
	})
	close(release)
	const answered = 1 + 1 + CheckQueueSize // the first transaction's END, the busy check, the queue
	f.nodes[0].waitEnds(t, answered)
	if n, c := len(f.nodes[0].ended()), checks.Load(); n != answered || c != CheckQueueSize+1 {
		t.Errorf("%d END_TRANSACTIONs (want %d), %d checks run (want %d)", n, answered, c, CheckQueueSize+1)
	}
}

// TestTransactionCloseCancelsChecker: Close cancels a running checker's
// context and returns once it has.
func TestTransactionCloseCancelsChecker(t *testing.T) {
	f := startTxFake(t, 1)
	running := make(chan struct{})
	var cancelled atomic.Bool
	tp := startTx(t, f, execUnknown, func(ctx context.Context, _ *message.MessageExt) TransactionState {
		close(running)
		<-ctx.Done()
		cancelled.Store(true)
		return UnknownTransaction
	})
	connect(t, f, tp)
	f.nodes[0].check(t, checkHeader("U", ""), halfMessage(txGroup, "U"))
	<-running
	if err := tp.Close(testCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if !cancelled.Load() {
		t.Error("Close returned before the checker saw its context cancelled")
	}
}
