package dledger_test

import (
	"context"
	"errors"
	"fmt"
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
			_, err := c.Node(i).Propose(context.Background(), &dledger.DeleteTopicCommand{Name: "x"})
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
		if got := n.Metadata().QueueMaxOffset(q); got != int64(len(es)) {
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
	if got := n.Metadata().MaxCommitOffset(); got != total {
		t.Errorf("max commit offset %d, sum of sizes %d", got, total)
	}
	t.Logf("entries: raft last index %d for 10000 messages", n.Raft().LastIndex())
}

func TestMetadataCommands(t *testing.T) {
	c := dledgertest.New(t, dledgertest.Options{Configure: fastConfig})
	l := c.Node(c.WaitLeader(5 * time.Second))
	ctx := context.Background()
	cmds := []dledger.Command{
		&dledger.PutTopicCommand{Topic: dledger.TopicConfig{Name: "t", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		&dledger.PutTopicCommand{Topic: dledger.TopicConfig{Name: "u", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		&dledger.PutSubscriptionGroupCommand{Group: dledger.SubscriptionGroupConfig{GroupName: "g", ConsumeEnable: true}},
		&dledger.CommitOffsetsCommand{Offsets: []dledger.ConsumerOffset{{OffsetKey: dledger.OffsetKey{Group: "g", Topic: "t", QueueID: 1}, Offset: 10}}},
		&dledger.CommitOffsetsCommand{Offsets: []dledger.ConsumerOffset{{OffsetKey: dledger.OffsetKey{Group: "g", Topic: "u", QueueID: 0}, Offset: 3}}},
		&dledger.ResetOffsetsCommand{Offsets: []dledger.ConsumerOffset{{OffsetKey: dledger.OffsetKey{Group: "g", Topic: "t", QueueID: 1}, Offset: 4}}},
		&dledger.DelayProgressCommand{Progress: []dledger.DelayProgress{{QueueID: 2, Offset: 9}}},
		&dledger.DeleteTopicCommand{Name: "u"},
	}
	for _, cmd := range cmds {
		if _, err := l.Propose(ctx, cmd); err != nil {
			t.Fatalf("%v: %v", cmd.Type(), err)
		}
	}
	// A delayed message delivered together with its level's progress.
	put := &dledger.PutMessagesCommand{
		Messages:      []dledger.Message{{Topic: "t", QueueID: 0, Record: record(t, "t", 0, []byte("due"))}},
		DelayProgress: []dledger.DelayProgress{{QueueID: 5, Offset: 1}},
	}
	if _, err := l.Propose(ctx, put); err != nil {
		t.Fatal(err)
	}
	c.WaitConverged(5 * time.Second)
	for _, i := range c.Live() {
		md := c.Node(i).Metadata()
		if _, ok := md.Topic("t"); !ok {
			t.Errorf("n%d: topic t missing", i)
		}
		if _, ok := md.Topic("u"); ok {
			t.Errorf("n%d: deleted topic u present", i)
		}
		if o, _ := md.ConsumerOffset(dledger.OffsetKey{Group: "g", Topic: "t", QueueID: 1}); o != 4 {
			t.Errorf("n%d: offset %d, want 4 after reset", i, o)
		}
		if _, ok := md.ConsumerOffset(dledger.OffsetKey{Group: "g", Topic: "u", QueueID: 0}); ok {
			t.Errorf("n%d: offset of deleted topic kept", i)
		}
		if d, _ := md.DelayOffset(2); d != 9 {
			t.Errorf("n%d: delay offset %d", i, d)
		}
		if d, _ := md.DelayOffset(5); d != 1 || md.QueueMaxOffset(dledger.QueueKey{Topic: "t", QueueID: 0}) != 1 {
			t.Errorf("n%d: put with delay progress: progress %d, queue max %d", i, d, md.QueueMaxOffset(dledger.QueueKey{Topic: "t", QueueID: 0}))
		}
		if g, ok := md.SubscriptionGroup("g"); !ok || !g.ConsumeEnable {
			t.Errorf("n%d: group %+v %v", i, g, ok)
		}
	}
}
