package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// batchFake is a fake name server and broker for topic "T" (one queue)
// that stores sends in order, single or batch, and counts the requests.
type batchFake struct {
	ns, broker *fakeServer
	gate       chan struct{} // the first send request waits for it to close
	gated      atomic.Bool
	jsonReqs   atomic.Int32 // requests with a JSON header
	// batchCodes scripts the answers to batch requests, in order
	// (SUCCESS once exhausted).
	batchCodes []int16

	mu      sync.Mutex
	next    int64    // next queue offset
	stored  []string // bodies in offset order
	singles int
	batches []int // messages per batch request answered SUCCESS
	batchN  int   // batch requests seen
}

func startBatchFake(t *testing.T, batchCodes ...int16) *batchFake {
	f := &batchFake{ns: startFake(t), broker: startFake(t), gate: make(chan struct{}), batchCodes: batchCodes}
	route := protocol.TopicRouteData{
		QueueDatas:  []protocol.QueueData{{BrokerName: "b", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		BrokerDatas: []protocol.BrokerData{{Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{0: f.broker.addr}}},
	}
	body, _ := json.Marshal(route)
	f.ns.srv.HandleFunc(remoting.ReqGetRouteInfoByTopic, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		f.countJSON(req)
		resp := remoting.NewResponse(req, remoting.ResSuccess, "")
		resp.Body = body
		return resp
	})
	f.broker.srv.HandleFunc(remoting.ReqHeartBeat, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		f.countJSON(req)
		return remoting.NewResponse(req, remoting.ResSuccess, "")
	})
	f.broker.srv.HandleFunc(remoting.ReqSendMessageV2, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		f.countJSON(req)
		f.wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.singles++
		return f.store(req, []string{string(req.Body)})
	})
	f.broker.srv.HandleFunc(remoting.ReqSendBatchMessage, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		f.countJSON(req)
		f.wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		n := f.batchN
		f.batchN++
		if n < len(f.batchCodes) && f.batchCodes[n] != remoting.ResSuccess {
			return remoting.NewResponse(req, f.batchCodes[n], "scripted")
		}
		inner, err := message.DecodeBatch(req.Body, req.ExtFields["b"])
		if err != nil || req.ExtFields["m"] != "true" {
			return remoting.NewResponse(req, remoting.ResMessageIllegal, fmt.Sprint(err))
		}
		bodies := make([]string, len(inner))
		for i, m := range inner {
			bodies[i] = string(m.Body)
		}
		f.batches = append(f.batches, len(inner))
		return f.store(req, bodies)
	})
	return f
}

func (f *batchFake) countJSON(req *remoting.Command) {
	if req.SerializeType != remoting.SerializeRocketMQ {
		f.jsonReqs.Add(1)
	}
}

func (f *batchFake) wait() {
	if !f.gated.Swap(true) {
		<-f.gate
	}
}

func (f *batchFake) store(req *remoting.Command, bodies []string) *remoting.Command {
	ids := make([]string, len(bodies))
	for i := range bodies {
		ids[i] = fmt.Sprintf("OFF%d", f.next+int64(i))
	}
	resp := remoting.NewResponse(req, remoting.ResSuccess, "")
	resp.ExtFields = map[string]string{"msgId": strings.Join(ids, ","), "queueId": "0",
		"queueOffset": strconv.FormatInt(f.next, 10)}
	f.next += int64(len(bodies))
	f.stored = append(f.stored, bodies...)
	return resp
}

func (f *batchFake) producer(t *testing.T, opts ...ProducerOpt) *Producer {
	t.Helper()
	p, err := NewProducer("pg-test", append([]ProducerOpt{WithNameServers(f.ns.addr), WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 20*time.Second)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	// Learn T's route, so SendAsync selects queues at once.
	if _, err := p.c.routes.get(ctx, "T"); err != nil {
		t.Fatal(err)
	}
	return p
}

type asyncOutcome struct {
	res   SendResult
	err   error
	calls int
}

// sendAll sends bodies b0..b(n-1) with SendAsync from one goroutine, opens
// the gate once all are queued, and waits for every callback.
func sendAll(t *testing.T, f *batchFake, p *Producer, n int) []asyncOutcome {
	t.Helper()
	ctx := testCtx(t, 20*time.Second)
	out := make([]asyncOutcome, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		p.SendAsync(ctx, newMsg("T", fmt.Sprintf("b%d", i)), func(r SendResult, err error) {
			mu.Lock()
			out[i].res, out[i].err = r, err
			out[i].calls++
			mu.Unlock()
			wg.Done()
		})
	}
	close(f.gate)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return out
}

// TestSendAsyncBatches: 600 SendAsync calls while the first request is in
// flight become that request and ceil(599/256) batches; each callback runs
// once with its own msgId, offsetMsgId and offset, in send order.
func TestSendAsyncBatches(t *testing.T) {
	f := startBatchFake(t)
	p := f.producer(t)
	const n = 600
	out := sendAll(t, f, p, n)
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.jsonReqs.Load(); n != 0 {
		t.Fatalf("%d requests with a JSON header, want binary headers only", n)
	}
	if f.singles != 1 || fmt.Sprint(f.batches) != "[256 256 87]" {
		t.Fatalf("%d single requests and batches %v, want 1 and [256 256 87]", f.singles, f.batches)
	}
	ids := map[string]bool{}
	for i, o := range out {
		if o.calls != 1 || o.err != nil {
			t.Fatalf("message %d: %d callbacks, error %v", i, o.calls, o.err)
		}
		if o.res.QueueOffset != int64(i) || f.stored[i] != fmt.Sprintf("b%d", i) ||
			o.res.OffsetMsgID != fmt.Sprintf("OFF%d", i) || o.res.Status != SendOK {
			t.Fatalf("message %d: result %+v, stored %q", i, o.res, f.stored[i])
		}
		if o.res.MsgID == "" || strings.Contains(o.res.MsgID, ",") || ids[o.res.MsgID] {
			t.Fatalf("message %d: msgId %q not its own", i, o.res.MsgID)
		}
		ids[o.res.MsgID] = true
	}
}

// TestSendAsyncBatchRetry: a batch answered SYSTEM_ERROR (retriable) is
// retried whole; one answered MESSAGE_ILLEGAL is sent again message by
// message.
func TestSendAsyncBatchRetry(t *testing.T) {
	for _, c := range []struct {
		code             int16
		singles, batches int
		attempts         int
	}{
		{remoting.ResSystemError, 1, 1, 2},
		{remoting.ResMessageIllegal, 1 + 9, 0, 1},
	} {
		t.Run(remoting.ResponseCodeName(c.code), func(t *testing.T) {
			f := startBatchFake(t, c.code)
			p := f.producer(t)
			out := sendAll(t, f, p, 10)
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.singles != c.singles || len(f.batches) != c.batches {
				t.Fatalf("%d singles, batches %v", f.singles, f.batches)
			}
			for i, o := range out {
				if o.calls != 1 || o.err != nil || o.res.QueueOffset != int64(i) || f.stored[i] != fmt.Sprintf("b%d", i) {
					t.Fatalf("message %d: %+v", i, o)
				}
				if i > 0 && o.res.Attempts != c.attempts {
					t.Fatalf("message %d: %d attempts, want %d", i, o.res.Attempts, c.attempts)
				}
			}
		})
	}
}

// TestSendAsyncUnbatchable: delayed and compressed messages, and every
// message with batching off, go as single requests.
func TestSendAsyncUnbatchable(t *testing.T) {
	for name, c := range map[string]struct {
		opts []ProducerOpt
		prep func(*message.Message)
	}{
		"delay":      {prep: func(m *message.Message) { m.SetDelayLevel(1) }},
		"timer":      {prep: func(m *message.Message) { SetDeliverAt(m, time.Now().Add(time.Hour)) }},
		"compressed": {opts: []ProducerOpt{WithCompressThreshold(1)}},
		"off":        {opts: []ProducerOpt{WithAsyncBatching(0, 0, 0)}},
	} {
		t.Run(name, func(t *testing.T) {
			f := startBatchFake(t)
			p := f.producer(t, c.opts...)
			ctx := testCtx(t, 20*time.Second)
			const n = 5
			var wg sync.WaitGroup
			wg.Add(n)
			for i := range n {
				m := newMsg("T", fmt.Sprintf("b%d", i))
				if c.prep != nil {
					c.prep(m)
				}
				p.SendAsync(ctx, m, func(_ SendResult, err error) {
					defer wg.Done()
					if err != nil {
						t.Errorf("message %d: %v", i, err)
					}
				})
			}
			close(f.gate)
			wg.Wait()
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.singles != n || f.batchN != 0 {
				t.Fatalf("%d singles, %d batch requests, want %d and 0", f.singles, f.batchN, n)
			}
		})
	}
}

// TestSendAsyncBatchingBroker: eight goroutines' SendAsync calls to a
// four-queue topic on a real group: every callback once, every (queue,
// offset) distinct, each goroutine's messages to a queue stored in the
// order it sent them, and all of it in the queues.
func TestSendAsyncBatchingBroker(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "ab", 4)
	p := startProducer(t, g)
	ctx := testCtx(t, 30*time.Second)
	const senders, each = 8, 100
	type key struct {
		q   int32
		off int64
	}
	var (
		mu   sync.Mutex
		seen = map[key]string{}
		wg   sync.WaitGroup
	)
	for s := range senders {
		for i := range each {
			wg.Add(1)
			body := fmt.Sprintf("s%d-%03d", s, i)
			p.SendAsync(ctx, newMsg("ab", body), func(r SendResult, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("%s: %v", body, err)
					return
				}
				k := key{r.Queue.QueueID, r.QueueOffset}
				if prev, dup := seen[k]; dup {
					t.Errorf("%s and %s both at %+v", prev, body, k)
				}
				seen[k] = body
			})
		}
	}
	wg.Wait()
	if len(seen) != senders*each {
		t.Fatalf("%d results, want %d", len(seen), senders*each)
	}
	g.WaitApplied(10 * time.Second)
	var total int64
	for q := range int32(4) {
		total += maxOffset(t, g, g.WaitLeader(10*time.Second), "ab", q)
		last := map[string]string{} // sender → last body seen in this queue
		for off := int64(0); ; off++ {
			body, ok := seen[key{q, off}]
			if !ok {
				break
			}
			s := body[:strings.Index(body, "-")]
			if prev := last[s]; prev != "" && prev > body {
				t.Fatalf("queue %d: %s stored after %s", q, body, prev)
			}
			last[s] = body
		}
	}
	if total != senders*each {
		t.Fatalf("queues hold %d messages, want %d", total, senders*each)
	}
}

// TestSendAsyncLinger: with a linger, messages that find nothing in flight
// wait for company until a batch is full.
func TestSendAsyncLinger(t *testing.T) {
	f := startBatchFake(t)
	close(f.gate)
	p := f.producer(t, WithAsyncBatching(4, 1<<20, time.Hour))
	ctx := testCtx(t, 20*time.Second)
	for round := range 2 { // the second after the first has returned
		var wg sync.WaitGroup
		wg.Add(4)
		for i := round * 4; i < round*4+4; i++ {
			p.SendAsync(ctx, newMsg("T", fmt.Sprintf("b%d", i)), func(r SendResult, err error) {
				defer wg.Done()
				if err != nil || r.QueueOffset != int64(i) {
					t.Errorf("message %d: %+v, %v", i, r, err)
				}
			})
		}
		wg.Wait()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.singles != 0 || fmt.Sprint(f.batches) != "[4 4]" {
		t.Fatalf("%d singles, batches %v, want 0 and [4 4]", f.singles, f.batches)
	}
}

// TestProducerBusyBacksOff: SYSTEM_BUSY is retried after a pause, beyond
// the retry budget, until the broker takes the message.
func TestProducerBusyBacksOff(t *testing.T) {
	busy := remoting.ResSystemBusy
	ns, _, sends := fakeCluster(t, busy, busy, busy, busy, busy)
	p, err := NewProducer("pg-test", WithNameServers(ns.addr), WithLogger(testLogger(t)), WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 10*time.Second)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	start := time.Now()
	res, err := p.Send(ctx, newMsg("T", "x"))
	if err != nil {
		t.Fatal(err)
	}
	// Pauses of 2, 4, 8, 16 and 32 ms before the sixth attempt.
	if res.Attempts != 6 || sends.Load() != 6 || time.Since(start) < 62*time.Millisecond {
		t.Fatalf("result %+v after %d sends in %v, want 6 attempts after >= 62ms", res, sends.Load(), time.Since(start))
	}
}

// changes lists the positions where the queue differs from the one before.
func changes(qs []int32) []int {
	var at []int
	for i := 1; i < len(qs); i++ {
		if qs[i] != qs[i-1] {
			at = append(at, i)
		}
	}
	return at
}

// TestStickyQueueFillsBatches: with the default selector a topic's async
// sends stay on one queue until its batch is full, so batches form however
// many queues the topic has; a custom selector is asked for every message.
func TestStickyQueueFillsBatches(t *testing.T) {
	var qs []MessageQueue
	for i := range 16 {
		qs = append(qs, MessageQueue{Topic: "T", BrokerName: "b", QueueID: int32(i)})
	}
	pickN := func(sticky bool, maxMessages, n int) []int32 {
		b := &batcher{p: &Producer{sel: RoundRobinSelector()}, maxMessages: maxMessages, maxBytes: 1 << 20, sticky: sticky,
			queues: map[batchKey]*queueBatch{}, current: map[string]MessageQueue{}}
		var got []int32
		for i := range n {
			am := &asyncMsg{m: &message.Message{Topic: "T", Body: []byte(fmt.Sprint(i))}}
			q := b.pickLocked(am.m, qs)
			b.addLocked(q, am) // the first message of a queue goes at once; the rest wait for it
			got = append(got, q.QueueID)
		}
		return got
	}
	pick := func(sticky bool) []int32 { return pickN(sticky, 3, 10) }
	s := pick(true)
	if s[0] != s[3] || s[3] == s[4] || s[4] != s[7] || s[7] == s[8] || s[8] != s[9] {
		t.Fatalf("sticky queues %v: want one queue for a message in flight plus a full batch of 3, then the next", s)
	}
	// With big batches a queue takes stickyBatch waiting messages (plus the
	// one in flight) before the next is picked.
	big := pickN(true, 256, 140)
	if big[0] != big[stickyBatch] || big[stickyBatch] == big[stickyBatch+1] || big[stickyBatch+1] != big[2*stickyBatch+1] {
		t.Fatalf("with batches of 256 the queue changed at %v, want after 1+%d messages", changes(big), stickyBatch)
	}
	rr := pick(false)
	seen := map[int32]bool{}
	for _, q := range rr {
		seen[q] = true
	}
	if len(seen) != 10 {
		t.Fatalf("custom selector queues %v: want it asked for every message (10 queues)", rr)
	}
}
