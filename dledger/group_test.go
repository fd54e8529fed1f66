package dledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/dledger/dledgertest"
)

func TestElectionAndReplicationTCP(t *testing.T) {
	c := dledgertest.New(t, dledgertest.Options{TCP: true, Configure: fastConfig})
	l := c.WaitLeader(5 * time.Second)
	for _, i := range c.Live() {
		if i == l {
			continue
		}
		// A follower learns the leader from its first append.
		c.Eventually(5*time.Second, func() error {
			_, err := c.Node(i).Propose(context.Background(), &dledgertest.DeleteCommand{Key: "x"})
			var nl *dledger.NotLeaderError
			if !errors.As(err, &nl) {
				t.Fatalf("follower n%d: err %v, want NotLeaderError", i, err)
			}
			if nl.LeaderAddr != c.Member(l).Addr || nl.LeaderID != c.Member(l).ID {
				return fmt.Errorf("follower n%d: %v, want leader %s", i, nl, c.Member(l).Addr)
			}
			return nil
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := &proposer{t: t, c: c}
	p.sendMany(ctx, 10000, 64, []string{"a", "b", "c"}, 4)
	acks := p.acks()
	if len(acks) != 10000 {
		t.Fatalf("%d of 10000 acknowledged", len(acks))
	}
	c.WaitConverged(10 * time.Second)
	checkQueuesIdentical(t, c)
	checkAcked(t, c, acks)
	// Offsets are dense per queue and commit offsets strictly increase.
	n := c.Node(l)
	var total int64
	for _, q := range c.Member(l).Sink.Queues() {
		_, es := c.Member(l).Sink.Entries(q)
		if got := n.QueueMaxOffset(q); got != int64(len(es)) {
			t.Errorf("%v: max offset %d, consumequeue holds %d", q, got, len(es))
		}
		for j := 1; j < len(es); j++ {
			if es[j].CommitOffset <= es[j-1].CommitOffset {
				t.Fatalf("%v: commit offsets not increasing at %d", q, j)
			}
		}
		for _, e := range es {
			total += int64(e.Size)
		}
	}
	if got := n.MaxCommitOffset(); got != total {
		t.Errorf("max commit offset %d, sum of sizes %d", got, total)
	}
	t.Logf("entries: raft last index %d for 10000 messages", n.Raft().LastIndex())
}

// TestStateMachineCommands: commands other than puts reach every node's
// state machine in log order; concurrent batchable ones share an entry;
// a put's side commands apply in the same entry as its messages.
func TestStateMachineCommands(t *testing.T) {
	c := dledgertest.New(t, dledgertest.Options{Configure: fastConfig})
	li := c.WaitLeader(5 * time.Second)
	l := c.Node(li)
	ctx := context.Background()
	cmds := []dledger.Command{
		&dledgertest.SetCommand{Key: "t", Value: "4 queues"},
		&dledgertest.SetCommand{Key: "u", Value: "1 queue"},
		&dledgertest.SetBatchCommand{Pairs: []dledgertest.SetCommand{{Key: "g/t/1", Value: "10"}}},
		&dledgertest.SetBatchCommand{Pairs: []dledgertest.SetCommand{{Key: "g/u/0", Value: "3"}}},
		&dledgertest.SetCommand{Key: "g/t/1", Value: "4"},
		&dledgertest.DeleteCommand{Key: "u"},
	}
	for _, cmd := range cmds {
		if _, err := l.Propose(ctx, cmd); err != nil {
			t.Fatalf("%v: %v", cmd.Type(), err)
		}
	}
	// Concurrent batchable commands are merged into one entry.
	var wg sync.WaitGroup
	results := make([]dledger.Result, 32)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := l.Propose(ctx, &dledgertest.SetBatchCommand{Pairs: []dledgertest.SetCommand{{Key: fmt.Sprintf("b%d", i), Value: "v"}}})
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	entries := map[uint64]bool{}
	for _, r := range results {
		entries[r.Index] = true
	}
	if len(entries) == len(results) {
		t.Errorf("32 concurrent batchable commands took %d entries: none were merged", len(entries))
	}
	// A delayed message delivered together with its scheduler's progress.
	put := &dledger.PutMessagesCommand{
		Messages: []dledger.Message{{Topic: "t", QueueID: 0, Record: record(t, "t", 0, []byte("due"))}},
		With:     []dledger.Command{&dledgertest.SetCommand{Key: "progress/5", Value: "1"}},
	}
	res, err := l.Propose(ctx, put)
	if err != nil {
		t.Fatal(err)
	}
	c.WaitConverged(5 * time.Second)
	for _, i := range c.Live() {
		sm := c.Member(i).SM
		if _, ok := sm.Get("t"); !ok {
			t.Errorf("n%d: key t missing", i)
		}
		if _, ok := sm.Get("u"); ok {
			t.Errorf("n%d: deleted key u present", i)
		}
		if v, _ := sm.Get("g/t/1"); v != "4" {
			t.Errorf("n%d: g/t/1 = %q, want 4 (set after the batch)", i, v)
		}
		if v, _ := sm.Get("b31"); v != "v" {
			t.Errorf("n%d: b31 = %q", i, v)
		}
		if v, _ := sm.Get("progress/5"); v != "1" || c.Node(i).QueueMaxOffset(dledger.QueueKey{Topic: "t", QueueID: 0}) != 1 {
			t.Errorf("n%d: put with a side command: progress %q, queue max %d", i, v, c.Node(i).QueueMaxOffset(dledger.QueueKey{Topic: "t", QueueID: 0}))
		}
		if got := sm.AppliedAt(res.Index); got != 1 {
			t.Errorf("n%d: %d commands applied at the put's index %d, want its side command", i, got, res.Index)
		}
	}
}
