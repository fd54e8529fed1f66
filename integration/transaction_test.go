package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// txnListener decides by the message's "outcome" property: commit,
// rollback, or unknown-<what the check-back answers>.
type txnListener struct {
	mu      sync.Mutex
	checks  map[string]int // by UNIQ_KEY
	execute func(*primitive.Message) primitive.LocalTransactionState
}

func (l *txnListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	if l.execute != nil {
		return l.execute(m)
	}
	switch m.GetProperty("outcome") {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *txnListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checks[m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)]++
	l.mu.Unlock()
	switch m.GetProperty("outcome") {
	case "unknown-commit", "commit", "hold":
		return primitive.CommitMessageState
	case "unknown-rollback", "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *txnListener) checked(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checks[key]
}

func newOfficialTxnProducer(t *testing.T, nsAddr, group string, l *txnListener) rocketmq.TransactionProducer {
	t.Helper()
	rlog.SetLogLevel("error")
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{nsAddr})),
		producer.WithGroupName(group),
		producer.WithInstanceName(fmt.Sprintf("%s-%d", group, time.Now().UnixNano())),
		producer.WithRetry(2),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// TestOfficialTransactionProducer: commit is delivered once, rollback
// never, and unknown is checked back and resolved both ways, with the
// unmodified Apache RocketMQ Go client on real broker processes.
func TestOfficialTransactionProducer(t *testing.T) {
	c := startCluster(t)
	const topic = "TXN"
	createTopicOn(t, c, topic, 4)
	l := &txnListener{checks: map[string]int{}}
	p := newOfficialTxnProducer(t, c.nsAddr, "txn-producer", l)
	outcomes := []string{"commit", "rollback", "unknown-commit", "unknown-rollback"}
	keys := map[int]string{}
	for i := 0; i < 12; i++ {
		m := e2eMessage(topic, i)
		m.WithProperty("outcome", outcomes[i%4])
		res, err := p.SendMessageInTransaction(context.Background(), m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("half %d: %v %v", i, res, err)
		}
		keys[i] = res.MsgID
	}
	want := map[int]bool{}
	for i := range keys {
		if o := outcomes[i%4]; o == "commit" || o == "unknown-commit" {
			want[i] = true
		}
	}
	got := consumeAll(t, c.nsAddr, topic, "txn-consumer", want, 60*time.Second)
	for i := range keys {
		switch {
		case want[i] && got[i] == nil:
			t.Errorf("committed message %d (%s) not delivered", i, outcomes[i%4])
		case !want[i] && got[i] != nil:
			t.Errorf("rolled-back message %d (%s) delivered", i, outcomes[i%4])
		}
		unknown := outcomes[i%4] == "unknown-commit" || outcomes[i%4] == "unknown-rollback"
		if n := l.checked(keys[i]); unknown && n != 1 || !unknown && n != 0 {
			t.Errorf("message %d (%s) checked back %d times", i, outcomes[i%4], n)
		}
	}
	// Everything decided: each queue holds exactly the committed messages.
	total := int64(0)
	offs, err := c.maxOffsets(c.waitLeader(5*time.Second), topic, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs {
		total += o
	}
	if total != int64(len(want)) {
		t.Errorf("the topic holds %d messages, want the %d committed", total, len(want))
	}
}

// TestOfficialTransactionSurvivesLeaderKill: the leader is killed between
// the half message and the producer's commit, whose oneway END_TRANSACTION
// then goes to the dead node; the new leader checks back (once the client
// has found it) and the message is delivered once. A commit that reached the old leader is delivered
// once after the kill too.
func TestOfficialTransactionSurvivesLeaderKill(t *testing.T) {
	c := startCluster(t)
	const topic = "TXNKILL"
	createTopicOn(t, c, topic, 1)
	release := make(chan struct{})
	var held atomic.Bool
	l := &txnListener{checks: map[string]int{}, execute: func(m *primitive.Message) primitive.LocalTransactionState {
		if m.GetProperty("outcome") == "hold" && held.CompareAndSwap(false, true) {
			<-release // the test kills the leader meanwhile
		}
		return primitive.CommitMessageState
	}}
	p := newOfficialTxnProducer(t, c.nsAddr, "txn-kill-producer", l)
	before := e2eMessage(topic, 0)
	before.WithProperty("outcome", "commit")
	if _, err := p.SendMessageInTransaction(context.Background(), before); err != nil {
		t.Fatal(err)
	}
	leader := c.waitLeader(5 * time.Second)
	waitFor(t, 10*time.Second, func() bool { // END_TRANSACTION is oneway
		offs, err := c.maxOffsets(leader, topic, 1)
		return err == nil && offs[0] == 1
	})
	held2 := e2eMessage(topic, 1)
	held2.WithProperty("outcome", "hold")
	sent := make(chan string, 1)
	go func() {
		res, err := p.SendMessageInTransaction(context.Background(), held2)
		if err != nil {
			t.Errorf("held half: %v", err)
			sent <- ""
			return
		}
		sent <- res.MsgID
	}()
	waitFor(t, 20*time.Second, held.Load)
	c.kill(leader)
	close(release)
	key := <-sent
	nl := c.waitLeader(10*time.Second, leader)
	t.Logf("killed n%d, new leader n%d", leader+1, nl+1)
	// The official client heartbeats only brokerId 0, and learns the new
	// leader at its next 30 s route poll: the new leader can check back
	// once that client's next 30 s heartbeat reaches it.
	start := time.Now()
	waitFor(t, 100*time.Second, func() bool {
		offs, err := c.maxOffsets(nl, topic, 1)
		return err == nil && offs[0] == 2
	})
	t.Logf("resolved by check-back %v after the kill", time.Since(start).Round(time.Second))
	if n := l.checked(key); n < 1 {
		t.Errorf("held transaction resolved without a check-back (%d)", n)
	}
	c.start(leader)
	got := consumeAll(t, c.nsAddr, topic, "txn-kill-consumer", map[int]bool{0: true, 1: true}, 90*time.Second)
	for i := 0; i < 2; i++ {
		if got[i] == nil {
			t.Errorf("message %d not delivered after the failover", i)
		}
	}
	// Nothing was stored twice: still two messages, and stays so.
	time.Sleep(3 * time.Second) // several check intervals: a repeated check-back would store again
	offs, _ := c.maxOffsets(c.waitLeader(10*time.Second), topic, 1)
	if offs[0] != 2 {
		t.Errorf("topic holds %d messages after the failover, want 2", offs[0])
	}
}
