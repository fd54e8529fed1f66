package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// sdkTxn is our TransactionProducer's executor and checker, deciding by
// the message's "outcome" property: commit, rollback, unknown-commit or
// unknown-rollback (unknown, then what the check-back answers). A
// "hold-" prefix makes the executor wait for release first.
type sdkTxn struct {
	mu      sync.Mutex
	checks  map[string]int // by UNIQ_KEY
	held    atomic.Int32
	release chan struct{}
}

func newSDKTxn() *sdkTxn { return &sdkTxn{checks: map[string]int{}, release: make(chan struct{})} }

func (x *sdkTxn) execute(_ context.Context, m *message.Message, _ any) client.TransactionState {
	o, hold := strings.CutPrefix(m.Property("outcome"), "hold-")
	if hold {
		x.held.Add(1)
		<-x.release // the test kills the leader meanwhile
	}
	switch o {
	case "commit":
		return client.CommitTransaction
	case "rollback":
		return client.RollbackTransaction
	}
	return client.UnknownTransaction
}

func (x *sdkTxn) check(_ context.Context, m *message.MessageExt) client.TransactionState {
	x.mu.Lock()
	x.checks[m.UniqKey()]++
	x.mu.Unlock()
	switch o := strings.TrimPrefix(m.Property("outcome"), "hold-"); o {
	case "commit", "unknown-commit":
		return client.CommitTransaction
	case "rollback", "unknown-rollback":
		return client.RollbackTransaction
	}
	return client.UnknownTransaction
}

func (x *sdkTxn) checked(key string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.checks[key]
}

func newSDKTxnProducer(t *testing.T, ns, group string, x *sdkTxn) *client.TransactionProducer {
	t.Helper()
	tp, err := client.NewTransactionProducer(group, x.execute, x.check, client.WithNameServers(ns),
		client.WithInstanceName(fmt.Sprintf("%s-%d", group, time.Now().UnixNano())))
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tp.Close(ctx)
	})
	return tp
}

// txnMessage is sdkMessage i with its outcome.
func txnMessage(topic string, i int, outcome string) *message.Message {
	m := sdkMessage(topic, i)
	m.SetProperty("outcome", outcome)
	return m
}

// committed reports whether an outcome ends in a commit.
func committed(outcome string) bool {
	o := strings.TrimPrefix(outcome, "hold-")
	return o == "commit" || o == "unknown-commit"
}

// deliveries is our push consumer's count of deliveries by idx.
type deliveries struct {
	mu  sync.Mutex
	got map[int]int
}

func (d *deliveries) handle(_ context.Context, msgs []*message.MessageExt) client.ConsumeResult {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range msgs {
		if idx, err := strconv.Atoi(m.Property("idx")); err == nil {
			d.got[idx]++
		}
	}
	return client.ConsumeSuccess
}

func (d *deliveries) has(want map[int]bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, w := range want {
		if w && d.got[i] == 0 {
			return false
		}
	}
	return true
}

func (d *deliveries) count(i int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.got[i]
}

// opRecords is how many transactions the leader has decided: one op
// record each in RMQ_SYS_TRANS_OP_HALF_TOPIC (-1 on error). A decided
// half is never checked back again.
func (c *cluster) opRecords() int64 {
	offs, err := c.maxOffsets(c.waitLeader(10*time.Second), protocol.TransOpHalfTopic, 1)
	if err != nil {
		return -1
	}
	return offs[0]
}

// stored is how many messages topic's queues hold on the leader.
func (c *cluster) stored(t *testing.T, topic string, queues int) int64 {
	t.Helper()
	offs, err := c.maxOffsets(c.waitLeader(10*time.Second), topic, queues)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, o := range offs {
		total += o
	}
	return total
}

// checkTxnOutcomes waits until every transaction is decided and every
// committed message was delivered to our push consumer, then checks that
// the committed ones were delivered and stored once and nothing else was.
func checkTxnOutcomes(t *testing.T, c *cluster, topic string, queues int, outcomes map[int]string) *deliveries {
	t.Helper()
	want := map[int]bool{}
	for i, o := range outcomes {
		want[i] = committed(o)
	}
	d := &deliveries{got: map[int]int{}}
	startSDKConsumer(t, c.nsAddr, topic+"-consumer", topic, "c1", d.handle)
	waitFor(t, 90*time.Second, func() bool { return c.opRecords() >= int64(len(outcomes)) && d.has(want) })
	if n := c.opRecords(); n != int64(len(outcomes)) {
		t.Errorf("%d op records for %d transactions", n, len(outcomes))
	}
	nWant := 0
	for i, o := range outcomes {
		if want[i] {
			nWant++
		}
		if n := d.count(i); want[i] && n != 1 || !want[i] && n != 0 {
			t.Errorf("message %d (%s) delivered %d times", i, o, n)
		}
	}
	if n := c.stored(t, topic, queues); n != int64(nWant) {
		t.Errorf("the topic holds %d messages, want the %d committed", n, nWant)
	}
	return d
}

// TestSDKTransactionProducer: with our TransactionProducer on real broker
// processes, commit is delivered once, rollback never, and unknown is
// checked back once and resolved both ways.
func TestSDKTransactionProducer(t *testing.T) {
	c := startCluster(t)
	const topic = "SDKTXN"
	createTopicOn(t, c, topic, 4)
	x := newSDKTxn()
	tp := newSDKTxnProducer(t, c.nsAddr, "sdk-txn-producer", x)
	kinds := []string{"commit", "rollback", "unknown-commit", "unknown-rollback"}
	outcomes, keys := map[int]string{}, map[int]string{}
	for i := 0; i < 12; i++ {
		outcomes[i] = kinds[i%4]
		m := txnMessage(topic, i, outcomes[i])
		res, err := tp.SendMessageInTransaction(context.Background(), m, nil)
		if err != nil || res.Status != client.SendOK {
			t.Fatalf("transaction %d: %+v %v", i, res, err)
		}
		wantState := map[string]client.TransactionState{"commit": client.CommitTransaction, "rollback": client.RollbackTransaction}[outcomes[i]]
		if res.State != wantState || res.EndErr != nil || res.MsgID != m.UniqKey() {
			t.Errorf("transaction %d (%s): state %v, end error %v, msgId %s (uniq key %s)", i, outcomes[i], res.State, res.EndErr, res.MsgID, m.UniqKey())
		}
		keys[i] = res.MsgID
	}
	checkTxnOutcomes(t, c, topic, 4, outcomes)
	for i, o := range outcomes {
		unknown := strings.HasPrefix(o, "unknown")
		if n := x.checked(keys[i]); unknown && n != 1 || !unknown && n != 0 {
			t.Errorf("transaction %d (%s) checked back %d times", i, o, n)
		}
	}
}

// TestSDKTransactionSurvivesLeaderKill: the leader is killed while four
// transactions (commit, rollback, unknown→commit, unknown→rollback) are in
// their executors, between the half message and END_TRANSACTION; later it
// is killed again after four more were decided or left in doubt, before
// anything was consumed. Each ends as without the kills: committed ones
// delivered once, rolled-back ones never, the doubtful ones checked back
// by a new leader.
func TestSDKTransactionSurvivesLeaderKill(t *testing.T) {
	c := startCluster(t)
	const topic = "SDKTXNKILL"
	createTopicOn(t, c, topic, 2)
	x := newSDKTxn()
	tp := newSDKTxnProducer(t, c.nsAddr, "sdk-txn-kill-producer", x)
	kinds := []string{"commit", "rollback", "unknown-commit", "unknown-rollback"}
	outcomes := map[int]string{}
	keys := make([]string, 8)

	// Kill between prepare and decision.
	var wg sync.WaitGroup
	results := make([]client.TransactionSendResult, 4)
	for i := range 4 {
		outcomes[i] = "hold-" + kinds[i]
		m := txnMessage(topic, i, outcomes[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := tp.SendMessageInTransaction(ctx, m, nil)
			if err != nil {
				t.Errorf("held transaction %d: %v", i, err)
			}
			results[i], keys[i] = res, m.UniqKey()
		}()
	}
	waitFor(t, 30*time.Second, func() bool { return x.held.Load() == 4 })
	leader := c.waitLeader(5 * time.Second)
	c.kill(leader)
	close(x.release)
	wg.Wait()
	for i, res := range results {
		t.Logf("held transaction %d (%s) after killing n%d: state %v, END_TRANSACTION error %v", i, outcomes[i], leader+1, res.State, res.EndErr)
	}
	c.start(leader)

	// Kill between the decision and delivery.
	for i := 4; i < 8; i++ {
		outcomes[i] = kinds[i%4]
		m := txnMessage(topic, i, outcomes[i])
		res, err := tp.SendMessageInTransaction(context.Background(), m, nil)
		if err != nil || res.Status != client.SendOK {
			t.Fatalf("transaction %d: %+v %v", i, res, err)
		}
		if outcomes[i] == "commit" || outcomes[i] == "rollback" {
			if res.EndErr != nil {
				t.Fatalf("transaction %d (%s): END_TRANSACTION: %v", i, outcomes[i], res.EndErr)
			}
		}
		keys[i] = res.MsgID
	}
	leader = c.waitLeader(20 * time.Second)
	c.kill(leader)
	nl := c.waitLeader(20*time.Second, leader)
	t.Logf("killed n%d, new leader n%d", leader+1, nl+1)
	c.start(leader)

	checkTxnOutcomes(t, c, topic, 2, outcomes)
	for i, o := range outcomes {
		n := x.checked(keys[i])
		switch {
		case strings.Contains(o, "unknown") && n < 1:
			t.Errorf("transaction %d (%s) resolved without a check-back", i, o)
		case i >= 4 && !strings.Contains(o, "unknown") && n != 0:
			t.Errorf("transaction %d (%s), decided before the kill, checked back %d times", i, o, n)
		}
		t.Logf("transaction %d (%s): %d check-backs", i, o, n)
	}
}
