package dledger_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/dledger/dledgertest"
	"github.com/raftmq/raftmq/internal/vfs"
	"github.com/raftmq/raftmq/message"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fastConfig shortens timeouts for tests; -race on two shared cores is
// slow, so not as short as raft's own 50 ms harness.
func fastConfig(_ int, c *dledger.Config) {
	c.HeartbeatTimeout = 400 * time.Millisecond
	c.ElectionTimeout = 400 * time.Millisecond
	c.LeaderLeaseTimeout = 300 * time.Millisecond
}

// record encodes a stored message record as the broker would.
func record(t testing.TB, topic string, qid int32, body []byte) []byte {
	t.Helper()
	m := &message.MessageExt{
		Message:   message.Message{Topic: topic, Body: body, Properties: map[string]string{"KEYS": "k"}},
		QueueID:   qid,
		BornHost:  netip.MustParseAddrPort("127.0.0.1:1"),
		StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
	}
	b, err := message.AppendExt(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ack is one acknowledged message.
type ack struct {
	q   dledger.QueueKey
	res dledger.MessageResult
	sz  int32
}

// proposer sends messages through whatever node is leader and records
// acknowledgements. Failed sends are retried against the new leader.
type proposer struct {
	t  testing.TB
	c  *dledgertest.Cluster
	mu sync.Mutex
	ok []ack
	// earlyAck sets PutMessagesCommand.EarlyAck; early counts the
	// answers that came before the leader applied the entry.
	earlyAck bool
	early    atomic.Int64
}

func (p *proposer) acks() []ack {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ack(nil), p.ok...)
}

// sendOne tries one message until acknowledged, the deadline passes or
// stop closes. Errors other than not-leader / unknown outcome fail the test.
func (p *proposer) sendOne(ctx context.Context, topic string, qid int32, body []byte) bool {
	for ctx.Err() == nil {
		n := p.anyLive()
		if n == nil {
			sleepCtx(ctx, 10*time.Millisecond)
			continue
		}
		rec := record(p.t, topic, qid, body)
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		res, err := n.Propose(cctx, &dledger.PutMessagesCommand{Messages: []dledger.Message{{Topic: topic, QueueID: qid, Record: rec}}, EarlyAck: p.earlyAck})
		cancel()
		if err == nil {
			select {
			case <-res.Applied():
			default:
				p.early.Add(1)
			}
			p.mu.Lock()
			p.ok = append(p.ok, ack{dledger.QueueKey{Topic: topic, QueueID: qid}, res.Messages[0], int32(len(rec))})
			p.mu.Unlock()
			return true
		}
		if ctx.Err() != nil {
			return false // stopped: the outcome of this last send is unknown
		}
		var nl *dledger.NotLeaderError
		// A node whose power was cut answers its last proposals with the
		// failed write (raft quotes the log store's error, so only its
		// text is left); a real one would just vanish: outcome unknown.
		powerLost := strings.Contains(err.Error(), vfs.ErrPowerLost.Error())
		if !errors.As(err, &nl) && !errors.Is(err, dledger.ErrLeadershipLost) && !errors.Is(err, dledger.ErrClosed) &&
			!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, dledger.ErrStaleProposal) && !powerLost {
			p.t.Errorf("propose: unexpected error %v", err)
			return false
		}
		sleepCtx(ctx, 5*time.Millisecond)
	}
	return false
}

func (p *proposer) anyLive() *dledger.Node {
	for _, i := range p.c.Live() {
		if n := p.c.Node(i); n != nil && n.IsLeader() {
			return n
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// sendMany sends total messages from workers goroutines over queues of
// topics, and returns when all are acknowledged.
func (p *proposer) sendMany(ctx context.Context, total, workers int, topics []string, queues int32) {
	var wg sync.WaitGroup
	per := total / workers
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			mine := per
			if w < total%workers {
				mine++
			}
			for i := 0; i < mine; i++ {
				topic := topics[(w+i)%len(topics)]
				if !p.sendOne(ctx, topic, int32((w*per+i)%int(queues)), []byte(fmt.Sprintf("w%d-%d", w, i))) {
					return
				}
			}
		}(w)
	}
	wg.Wait()
}

// checkAcked asserts every acknowledged message is in every live node's
// consumequeue, at its queue offset, with its commit offset and size.
func checkAcked(t testing.TB, c *dledgertest.Cluster, acks []ack) {
	t.Helper()
	type held struct {
		min     int64
		entries []dledgertest.Entry
	}
	for _, i := range c.Live() {
		sink := c.Member(i).Sink
		queues := map[dledger.QueueKey]held{}
		for _, a := range acks {
			h, ok := queues[a.q]
			if !ok {
				h.min, h.entries = sink.Entries(a.q)
				queues[a.q] = h
			}
			idx := a.res.QueueOffset - h.min
			if idx < 0 {
				continue // deleted by retention everywhere before this node installed a snapshot
			}
			if idx >= int64(len(h.entries)) {
				t.Fatalf("n%d: acknowledged %v@%d missing (queue holds %d..%d)", i, a.q, a.res.QueueOffset, h.min, h.min+int64(len(h.entries)))
			}
			if e := h.entries[idx]; e.CommitOffset != a.res.CommitOffset || e.Size != a.sz {
				t.Fatalf("n%d: %v@%d is %+v, acknowledged commit offset %d size %d", i, a.q, a.res.QueueOffset, e, a.res.CommitOffset, a.sz)
			}
		}
	}
}

// checkQueuesIdentical asserts all live nodes hold identical consumequeues
// (over the offsets they all hold).
func checkQueuesIdentical(t testing.TB, c *dledgertest.Cluster) {
	t.Helper()
	live := c.Live()
	ref := c.Member(live[0]).Sink
	for _, i := range live[1:] {
		s := c.Member(i).Sink
		if !reflect.DeepEqual(s.Queues(), ref.Queues()) {
			t.Fatalf("n%d queues %v, n%d queues %v", i, s.Queues(), live[0], ref.Queues())
		}
		for _, q := range ref.Queues() {
			m1, e1 := ref.Entries(q)
			m2, e2 := s.Entries(q)
			lo := max(m1, m2)
			if m1+int64(len(e1)) != m2+int64(len(e2)) {
				t.Fatalf("%v: n%d ends at %d, n%d at %d", q, live[0], m1+int64(len(e1)), i, m2+int64(len(e2)))
			}
			if !reflect.DeepEqual(e1[lo-m1:], e2[lo-m2:]) {
				a, b := e1[lo-m1:], e2[lo-m2:]
				for k := range a {
					if !reflect.DeepEqual(a[k], b[k]) {
						t.Fatalf("%v: n%d and n%d differ from queue offset %d (of %d..%d): %+v vs %+v", q, live[0], i, lo+int64(k), lo, m1+int64(len(e1)), a[k], b[k])
					}
				}
			}
		}
	}
}
