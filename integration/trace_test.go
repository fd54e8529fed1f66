package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// TestOfficialClientMessageTrace runs the official Go client's producer
// and push consumer with their trace hooks on: the trace records land in
// RMQ_SYS_TRACE_TOPIC, our Admin.QueryTrace finds every message's send,
// delivery and consumption, and `raftmq message trace --id` prints them.
func TestOfficialClientMessageTrace(t *testing.T) {
	c := startCluster(t)
	const topic = "Traced"
	createTopicOn(t, c, topic, 2)
	traceNameServer.set(c.nsAddr)
	trace := &primitive.TraceConfig{Resolver: traceNameServer, Access: primitive.Local}
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.nsAddr})),
		producer.WithGroupName("trace-producer"),
		producer.WithInstanceName(fmt.Sprintf("trace-producer-%d", time.Now().UnixNano())),
		producer.WithTrace(trace),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	ids := map[string]bool{}
	for i := 0; i < 5; i++ {
		r, err := p.SendSync(context.Background(), e2eMessage(topic, i))
		if err != nil {
			t.Fatal(err)
		}
		ids[r.MsgID] = true
	}
	consumeTraced(t, c.nsAddr, topic, "trace-consumer", trace, ids)

	a := newTestAdmin(t, c.nsAddr)
	for id := range ids {
		tr := waitTrace(t, a, id, hasTimeline)
		pub := tr.Records[0]
		if pub.Type != protocol.TracePub || pub.Topic != topic || pub.Group != "trace-producer" || !pub.Success || pub.OffsetMsgID == "" {
			t.Errorf("%s: first record %+v, want a successful Pub of %s by trace-producer", id, pub, topic)
		}
		for _, r := range tr.Records[1:] {
			if r.Type != protocol.TracePub && r.Group != "trace-consumer" {
				t.Errorf("%s: %s record of group %q, want trace-consumer", id, r.Type, r.Group)
			}
		}
	}
	for id := range ids {
		b, err := exec.Command(raftmqBin, "message", "trace", "--id", id, "--namesrv", c.nsAddr).CombinedOutput()
		out := string(b)
		if err != nil {
			t.Fatalf("raftmq message trace: %v\n%s", err, out)
		}
		for _, want := range []string{"sent", "delivered", "consumed", "trace-producer", "trace-consumer", "topic " + topic} {
			if !strings.Contains(out, want) {
				t.Errorf("message trace output lacks %q:\n%s", want, out)
			}
		}
		break
	}
	if b, err := exec.Command(raftmqBin, "message", "trace", "--id", "0A00000000002A9F0000000000000000", "--namesrv", c.nsAddr).CombinedOutput(); err == nil ||
		!strings.Contains(string(b), "no trace records") {
		t.Errorf("trace of an unknown id: err %v, output:\n%s", err, b)
	}
}

// traceNameServer resolves the trace hooks' name server. The official
// client keeps one trace client per process (instance
// INNER_TRACE_CLIENT_DEFAULT) and refuses a later trace config whose name
// servers differ from the first one's; a shared resolver that answers the
// current test's name server lets each test trace against its own cluster.
var traceNameServer = &switchedResolver{}

type switchedResolver struct {
	mu   sync.Mutex
	addr string
}

func (r *switchedResolver) set(addr string) { r.mu.Lock(); r.addr = addr; r.mu.Unlock() }

// Resolve returns the current name server.
func (r *switchedResolver) Resolve() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return []string{r.addr}
}

// Description names the resolver.
func (r *switchedResolver) Description() string { return "the current test's name server" }

// newTestAdmin is an SDK admin client of name server ns, closed with t.
func newTestAdmin(t *testing.T, ns string) *client.Admin {
	t.Helper()
	a, err := client.NewAdmin(client.WithNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// waitTrace waits until the trace of message id satisfies done and
// returns it.
func waitTrace(t *testing.T, a *client.Admin, id string, done func(*client.Trace) bool) *client.Trace {
	t.Helper()
	var tr *client.Trace
	waitFor(t, 30*time.Second, func() bool {
		var err error
		tr, err = a.QueryTrace(context.Background(), "", id, time.Now().Add(-time.Hour), time.Time{})
		if err != nil || !done(tr) {
			t.Logf("trace of %s so far: %+v (%v)", id, tr, err)
			return false
		}
		return true
	})
	return tr
}

// hasTimeline says whether tr holds a send, a delivery and a successful
// consumption, in that order.
func hasTimeline(tr *client.Trace) bool {
	var seen []protocol.TraceType
	for _, r := range tr.Records {
		if r.Type == protocol.TraceSubAfter && !r.Success {
			continue
		}
		seen = append(seen, r.Type)
	}
	return strings.Contains(fmt.Sprint(seen), "Pub SubBefore SubAfter")
}

// consumeTraced consumes ids from topic with a traced official push
// consumer and returns once every id was consumed.
func consumeTraced(t *testing.T, ns, topic, group string, trace *primitive.TraceConfig, ids map[string]bool) {
	t.Helper()
	var mu sync.Mutex
	got := map[string]bool{}
	c := startOfficialConsumer(t, ns, group, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				got[m.MsgId] = true
			}
			return consumer.ConsumeSuccess, nil
		}, consumer.WithTrace(trace))
	t.Cleanup(func() { _ = c.Shutdown() })
	waitFor(t, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for id := range ids {
			if !got[id] {
				return false
			}
		}
		return true
	})
}

// TestSDKMessageTrace: our producer and push consumer with WithTrace write
// records the same tools read; an official traced consumer of another
// group adds its records to the same timelines; a message sent with
// TRACE_ON=false leaves none.
func TestSDKMessageTrace(t *testing.T) {
	c := startCluster(t)
	const topic = "SDKTraced"
	createTopicOn(t, c, topic, 2)
	p, err := client.NewProducer("sdk-trace-producer", client.WithNameServers(c.nsAddr), client.WithTrace(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	// Not in topic: the official consumer's trace hook drops a whole
	// batch of records when one of them is about a TRACE_ON=false message.
	createTopicOn(t, c, "SDKUntraced", 1)
	untraced := sdkMessage("SDKUntraced", 100)
	untraced.SetProperty("TRACE_ON", "false")
	if _, err := p.Send(context.Background(), untraced); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		m := sdkMessage(topic, i)
		if i%2 == 0 {
			r, err := p.Send(context.Background(), m)
			if err != nil {
				t.Fatal(err)
			}
			ids[r.MsgID] = true
			continue
		}
		wg.Add(1)
		p.SendAsync(context.Background(), m, func(r client.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("async send: %v", err)
				return
			}
			mu.Lock()
			ids[r.MsgID] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	col := &sdkCollector{got: map[int]*message.MessageExt{}}
	startSDKConsumer(t, c.nsAddr, "sdk-trace-consumer", topic, "sdk-trace-consumer", col.handle, client.WithTrace(""))
	waitFor(t, 60*time.Second, func() bool { return col.count() == 6 })
	traceNameServer.set(c.nsAddr)
	consumeTraced(t, c.nsAddr, topic, "official-trace-consumer", &primitive.TraceConfig{Resolver: traceNameServer, Access: primitive.Local}, ids)

	a := newTestAdmin(t, c.nsAddr)
	for id := range ids {
		tr := waitTrace(t, a, id, func(tr *client.Trace) bool {
			return consumedBy(tr, "sdk-trace-consumer") && consumedBy(tr, "official-trace-consumer")
		})
		pub := tr.Records[0]
		if pub.Type != protocol.TracePub || pub.Group != "sdk-trace-producer" || pub.Topic != topic || !pub.Success ||
			pub.StoreHost == "" || pub.OffsetMsgID == "" || pub.BodyLength == 0 || pub.Keys == "" {
			t.Errorf("%s: first record %+v, want our producer's successful Pub", id, pub)
		}
	}
	tr, err := a.QueryTrace(context.Background(), "", untraced.UniqKey(), time.Now().Add(-time.Hour), time.Time{})
	if err != nil || len(tr.Records) != 0 {
		t.Errorf("TRACE_ON=false message: %v, records %+v; want none", err, tr)
	}
}

// consumedBy says whether tr holds a delivery to group and its successful
// consumption.
func consumedBy(tr *client.Trace, group string) bool {
	before, after := false, false
	for _, r := range tr.Records {
		before = before || r.Type == protocol.TraceSubBefore && r.Group == group
		after = after || r.Type == protocol.TraceSubAfter && r.Group == group && r.Success
	}
	return before && after
}
