package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Options are typed: each is accepted by the constructors it applies to.
// That one is refused elsewhere is checked at run time below (a compile
// error cannot be a test).
var (
	_ Opt       = WithNameServers("127.0.0.1:9876")
	_ MemberOpt = WithInstanceName("i")
	_ Opt       = WithLogger(nil)
	_ Opt       = WithRequestTimeout(time.Second)
	_ Opt       = WithDialTimeout(time.Second)
	_ MemberOpt = WithRouteRefreshInterval(time.Second)
	_ MemberOpt = WithHeartbeatInterval(time.Second)

	_ SendOpt     = WithSendTimeout(time.Second)
	_ SendOpt     = WithRetries(0)
	_ SendOpt     = WithCompressThreshold(0)
	_ SendOpt     = WithCompressLevel(1)
	_ SendOpt     = WithMaxMessageSize(1)
	_ SendOpt     = WithSelector(nil)
	_ SendOpt     = WithFaultAvoidance(true)
	_ ProducerOpt = WithAsyncBatching(0, 0, 0)

	_ TransactionProducerOpt = WithCheckWorkers(1)

	_ ConsumerOpt = WithMessageModel(Clustering)
	_ ConsumerOpt = WithConsumeFrom(ConsumeFromFirst())
	_ ConsumerOpt = WithAllocateStrategy(AllocateAveragely)
	_ ConsumerOpt = WithPullBatchSize(1)
	_ ConsumerOpt = WithPullThresholds(1, 1, 1)
	_ ConsumerOpt = WithRebalanceInterval(time.Second)
	_ ConsumerOpt = WithOffsetStoreDir("")
	_ ConsumerOpt = WithSuspendTimeout(time.Second)

	_ PushConsumerOpt = WithConsumeGoroutines(1)
	_ PushConsumerOpt = WithConsumeBatchSize(1)
	_ PushConsumerOpt = WithCommitInterval(time.Second)
	_ PushConsumerOpt = WithMaxReconsumeTimes(1)
	_ PushConsumerOpt = WithLocalRetryDelay(time.Second)
	_ PushConsumerOpt = WithOrderly()
	_ PushConsumerOpt = WithOrderlySuspend(time.Second)
)

// Client kinds an option may apply to.
const (
	kAdmin = 1 << iota
	kProducer
	kPush
	kPull
	kTx

	kAll       = kAdmin | kProducer | kTx | kPush | kPull
	kMember    = kProducer | kTx | kPush | kPull
	kProducers = kProducer | kTx
	kConsumer  = kPush | kPull
)

// TestOptionKinds: every option is accepted by exactly the kinds of client
// that read it: the common ones by all five, the sending ones by both
// producers, WithAsyncBatching by NewProducer only, WithCheckWorkers by
// NewTransactionProducer only, the consumers' by both consumers, the push
// consumer's by NewPushConsumer only.
func TestOptionKinds(t *testing.T) {
	for name, c := range map[string]struct {
		o     any
		kinds int
	}{
		"WithNameServers":          {WithNameServers("a:1"), kAll},
		"WithInstanceName":         {WithInstanceName("i"), kMember},
		"WithLogger":               {WithLogger(nil), kAll},
		"WithRequestTimeout":       {WithRequestTimeout(time.Second), kAll},
		"WithDialTimeout":          {WithDialTimeout(time.Second), kAll},
		"WithRouteRefreshInterval": {WithRouteRefreshInterval(time.Second), kMember},
		"WithHeartbeatInterval":    {WithHeartbeatInterval(time.Second), kMember},
		"WithSendTimeout":          {WithSendTimeout(time.Second), kProducers},
		"WithRetries":              {WithRetries(1), kProducers},
		"WithCompressThreshold":    {WithCompressThreshold(1), kProducers},
		"WithCompressLevel":        {WithCompressLevel(1), kProducers},
		"WithMaxMessageSize":       {WithMaxMessageSize(1), kProducers},
		"WithSelector":             {WithSelector(nil), kProducers},
		"WithFaultAvoidance":       {WithFaultAvoidance(true), kProducers},
		"WithAsyncBatching":        {WithAsyncBatching(0, 0, 0), kProducer},
		"WithCheckWorkers":         {WithCheckWorkers(2), kTx},
		"WithMessageModel":         {WithMessageModel(Broadcasting), kConsumer},
		"WithConsumeFrom":          {WithConsumeFrom(ConsumeFromFirst()), kConsumer},
		"WithAllocateStrategy":     {WithAllocateStrategy(AllocateAveragely), kConsumer},
		"WithPullBatchSize":        {WithPullBatchSize(1), kConsumer},
		"WithPullThresholds":       {WithPullThresholds(1, 1, 1), kConsumer},
		"WithRebalanceInterval":    {WithRebalanceInterval(time.Second), kConsumer},
		"WithOffsetStoreDir":       {WithOffsetStoreDir("d"), kConsumer},
		"WithSuspendTimeout":       {WithSuspendTimeout(time.Second), kConsumer},
		"WithConsumeGoroutines":    {WithConsumeGoroutines(1), kPush},
		"WithConsumeBatchSize":     {WithConsumeBatchSize(1), kPush},
		"WithCommitInterval":       {WithCommitInterval(time.Second), kPush},
		"WithMaxReconsumeTimes":    {WithMaxReconsumeTimes(1), kPush},
		"WithLocalRetryDelay":      {WithLocalRetryDelay(time.Second), kPush},
		"WithOrderly":              {WithOrderly(), kPush},
		"WithOrderlySuspend":       {WithOrderlySuspend(time.Second), kPush},
	} {
		_, admin := c.o.(Opt)
		_, producer := c.o.(ProducerOpt)
		_, tx := c.o.(TransactionProducerOpt)
		_, push := c.o.(PushConsumerOpt)
		_, pull := c.o.(PullConsumerOpt)
		_, send := c.o.(SendOpt)
		_, consumer := c.o.(ConsumerOpt)
		_, member := c.o.(MemberOpt)
		got := 0
		for _, k := range []struct {
			ok   bool
			kind int
		}{{admin, kAdmin}, {producer, kProducer}, {tx, kTx}, {push, kPush}, {pull, kPull}} {
			if k.ok {
				got |= k.kind
			}
		}
		if got != c.kinds || send != (c.kinds&kProducers == kProducers) || consumer != (c.kinds&kConsumer == kConsumer) ||
			member != (c.kinds&kMember == kMember) {
			t.Errorf("%s applies to kinds %05b (SendOpt %v, ConsumerOpt %v, MemberOpt %v), want %05b",
				name, got, send, consumer, member, c.kinds)
		}
	}
}

// TestOptionsReachEveryKind: a common option sets what each kind reads,
// a consumer option what both consumers read.
func TestOptionsReachEveryKind(t *testing.T) {
	common := []Opt{WithNameServers("n1:1;n2:2"), WithRequestTimeout(7 * time.Second), WithDialTimeout(time.Second)}
	check := func(kind string, c *config) {
		t.Helper()
		if strings.Join(c.nameServers, ",") != "n1:1,n2:2" || c.requestTimeout != 7*time.Second || c.dialTimeout != time.Second {
			t.Errorf("%s: name servers %v, request timeout %v, dial timeout %v", kind, c.nameServers, c.requestTimeout, c.dialTimeout)
		}
	}
	ac, err := newConfig(common)
	if err != nil {
		t.Fatal(err)
	}
	check("admin", ac)
	pc, err := newProducerConfig("pg", []ProducerOpt{common[0], common[1], common[2], WithRetries(5)})
	if err != nil || pc.retries != 5 {
		t.Fatalf("producer: %v, retries %d", err, pc.retries)
	}
	check("producer", &pc.config)
	tc, err := newTxConfig("pg", []TransactionProducerOpt{common[0], common[1], common[2], WithRetries(5), WithCheckWorkers(3)})
	if err != nil || tc.retries != 5 || tc.checkWorkers != 3 {
		t.Fatalf("transaction producer: %v, retries %d, check workers %d", err, tc.retries, tc.checkWorkers)
	}
	check("transaction producer", &tc.config)
	push, err := newPushConfig("cg", []PushConsumerOpt{common[0], common[1], common[2], WithPullBatchSize(7), WithConsumeGoroutines(3)})
	if err != nil || push.pullBatch != 7 || push.goroutines != 3 {
		t.Fatalf("push consumer: %v, pull batch %d, goroutines %d", err, push.pullBatch, push.goroutines)
	}
	check("push consumer", &push.config)
	pull, err := newPullConfig("cg", []PullConsumerOpt{common[0], common[1], common[2], WithPullBatchSize(7), nil})
	if err != nil || pull.pullBatch != 7 {
		t.Fatalf("pull consumer: %v, pull batch %d", err, pull.pullBatch)
	}
	check("pull consumer", &pull.config)
}

// TestGroupRequired: the group is the constructors' first argument; empty
// or invalid it is an ErrInvalidOption, as are out-of-range options.
func TestGroupRequired(t *testing.T) {
	long := strings.Repeat("g", 256)
	ns := WithNameServers("127.0.0.1:1")
	var errs = map[string]error{}
	_, errs[`NewProducer("")`] = NewProducer("", ns)
	_, errs[`NewProducer("a b")`] = NewProducer("a b", ns)
	_, errs[`NewProducer(long)`] = NewProducer(long, ns)
	_, errs[`NewPushConsumer("bad group!")`] = NewPushConsumer("bad group!", ns)
	_, errs[`NewPushConsumer("")`] = NewPushConsumer("", ns)
	_, errs[`NewPullConsumer("")`] = NewPullConsumer("", ns)
	_, errs[`NewPullConsumer("g/h")`] = NewPullConsumer("g/h", ns)
	_, errs["WithSendTimeout(0)"] = NewProducer("pg", ns, WithSendTimeout(0))
	_, errs[`NewTransactionProducer("")`] = NewTransactionProducer("", execCommit, checkCommit, ns)
	_, errs["NewTransactionProducer(nil executor)"] = NewTransactionProducer("pg", nil, checkCommit, ns)
	_, errs["NewTransactionProducer(nil checker)"] = NewTransactionProducer("pg", execCommit, nil, ns)
	_, errs["WithCheckWorkers(0)"] = NewTransactionProducer("pg", execCommit, checkCommit, ns, WithCheckWorkers(0))
	_, errs["transaction WithSendTimeout(0)"] = NewTransactionProducer("pg", execCommit, checkCommit, ns, WithSendTimeout(0))
	_, errs["WithNameServers()"] = NewAdmin(WithNameServers())
	_, errs["WithConsumeGoroutines(0)"] = NewPushConsumer("cg", ns, WithConsumeGoroutines(0))
	_, errs["WithCommitInterval(0)"] = NewPushConsumer("cg", ns, WithCommitInterval(0))
	_, errs["WithPullBatchSize(0)"] = NewPullConsumer("cg", ns, WithPullBatchSize(0))
	_, errs["WithHeartbeatInterval(0)"] = NewPullConsumer("cg", ns, WithHeartbeatInterval(0))
	for call, err := range errs {
		if !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", call, err)
		}
	}
	for _, group := range []string{"pg", "%RETRY%cg", "a|b_c-D9", long[:255]} {
		p, err := NewProducer(group, ns)
		if err != nil {
			t.Fatalf("NewProducer(%q): %v", group, err)
		}
		_ = p.Close(context.Background())
	}
}
