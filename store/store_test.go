package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/goleak"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/dledger/dledgertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// group is a dledgertest cluster whose nodes each run on a real Store.
type group struct {
	c      *dledgertest.Cluster
	mu     sync.Mutex
	stores []*store.Store
}

func startGroup(t *testing.T, nodes int, configure func(*store.Config)) *group {
	return startGroupWith(t, nodes, nil, configure)
}

// startGroupWith is startGroup whose nodes' dledger configuration node
// adjusts further.
func startGroupWith(t *testing.T, nodes int, node func(*dledger.Config), configure func(*store.Config)) *group {
	g := &group{stores: make([]*store.Store, nodes)}
	g.c = dledgertest.New(t, dledgertest.Options{Nodes: nodes,
		Configure: func(_ int, c *dledger.Config) {
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 400*time.Millisecond, 400*time.Millisecond, 300*time.Millisecond
			if node != nil {
				node(c)
			}
		},
		OpenStore: func(i int, dir string) (raft.LogStore, dledger.Dispatcher, func() error, error) {
			cfg := store.DefaultConfig()
			cfg.Dir = dir
			cfg.CommitLog.SegmentSize = 1 << 20
			cfg.CommitLog.Retention.DiskUsage = func(string) (float64, error) { return 0.1, nil }
			cfg.ConsumeQueue.EntriesPerFile = 500
			cfg.Index.SlotNum, cfg.Index.IndexNum = 1024, 4096
			if configure != nil {
				configure(&cfg)
			}
			s, err := store.Open(cfg)
			if err != nil {
				return nil, nil, nil, err
			}
			g.mu.Lock()
			g.stores[i] = s
			g.mu.Unlock()
			return s.Log(), s, s.Close, nil
		}})
	g.c.WaitLeader(5 * time.Second)
	return g
}

func (g *group) store(i int) *store.Store {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stores[i]
}

// record encodes a stored message record as the broker would.
func record(t testing.TB, topic string, qid int32, tags string, body []byte) []byte {
	t.Helper()
	m := &message.MessageExt{
		Message:   message.Message{Topic: topic, Body: body, Properties: map[string]string{"KEYS": "k-" + string(body)}},
		QueueID:   qid,
		BornHost:  netip.MustParseAddrPort("127.0.0.1:1"),
		StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
	}
	if tags != "" {
		m.SetTags(tags)
	}
	b, err := message.AppendExt(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// send proposes n messages to topic's queues through the leader, retrying
// across leader changes, and returns their results.
func (g *group) send(t *testing.T, topic string, queues int32, n int, tags string) []dledger.MessageResult {
	t.Helper()
	var out []dledger.MessageResult
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		q := int32(i) % queues
		body := []byte(fmt.Sprintf("%s-%d", topic, i))
		m := dledger.Message{Topic: topic, QueueID: q, Record: record(t, topic, q, tags, body),
			Keys: []string{store.IndexKey(topic, "k-"+string(body))}}
		if tags != "" {
			m.TagsCode = message.TagsHashCode(tags)
		}
		for {
			l := g.c.Node(g.c.WaitLeader(5 * time.Second))
			res, err := l.Propose(ctx, &dledger.PutMessagesCommand{Messages: []dledger.Message{m}})
			if err == nil {
				out = append(out, res.Messages[0])
				break
			}
			var nl *dledger.NotLeaderError
			if !errors.As(err, &nl) && !errors.Is(err, dledger.ErrLeadershipLost) {
				t.Fatalf("propose: %v", err)
			}
			m.Record = record(t, topic, q, tags, body) // the leader stamped the old one
		}
	}
	return out
}

// TestConsumeQueueFilesByteIdentical dispatches to real stores and
// compares their consumequeue files across the three nodes, before and
// after a node restarts and replays its log into its existing store.
func TestConsumeQueueFilesByteIdentical(t *testing.T) {
	g := startGroup(t, 3, nil)
	g.send(t, "a", 3, 600, "")
	g.send(t, "b", 3, 300, "")
	g.c.WaitConverged(10 * time.Second)
	g.compareQueues(t)

	g.c.Kill(2)
	g.send(t, "a", 3, 150, "")
	g.c.Restart(2) // replays every entry into a store that already holds most
	g.c.WaitConverged(10 * time.Second)
	g.compareQueues(t)
	if got := g.store(2).MaxOffset("a", 0); got != 250 {
		t.Fatalf("restarted node's queue a/0 ends at %d, want 250", got)
	}
}

func (g *group) compareQueues(t *testing.T) {
	t.Helper()
	var ref map[string][]byte
	for i := range g.stores {
		s := g.store(i)
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		got := readTree(t, filepath.Join(g.c.Member(i).Dir, "store", "consumequeue"))
		if i == 0 {
			if ref = got; len(ref) == 0 {
				t.Fatal("no consumequeue files")
			}
			continue
		}
		if len(got) != len(ref) {
			t.Fatalf("node %d has %d files, node 0 %d", i, len(got), len(ref))
		}
		for name, b := range ref {
			if !bytes.Equal(got[name], b) {
				t.Fatalf("node %d: %s differs from node 0", i, name)
			}
		}
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tagFilter matches one tag hash.
type tagFilter int64

func (tagFilter) MatchesAll() bool          { return false }
func (f tagFilter) Matches(code int64) bool { return int64(f) == code }

// TestGetMessageStatuses reads a queue in every position GetMessage
// distinguishes, on every replica.
func TestGetMessageStatuses(t *testing.T) {
	g := startGroup(t, 3, nil)
	res := g.send(t, "t", 1, 40, "red")
	g.send(t, "t", 1, 10, "blue")
	g.c.WaitConverged(10 * time.Second)
	for i := range 3 {
		s := g.store(i)
		r := s.GetMessage("t", 0, 0, 32, nil)
		if r.Status != store.Found || r.NextBeginOffset != 32 || r.MinOffset != 0 || r.MaxOffset != 50 {
			t.Fatalf("n%d from 0: %+v", i, r)
		}
		msgs, err := message.DecodeExts(r.Body)
		if err != nil || len(msgs) != 32 || msgs[5].CommitLogOffset != res[5].CommitOffset {
			t.Fatalf("n%d: %d messages decoded (%v)", i, len(msgs), err)
		}
		// Behind counts from the last entry the read examined: the 32nd
		// message, then (a tag filter scans on) the 50th.
		end := s.MaxCommitOffset()
		if r.Behind != end-res[31].CommitOffset || r.Behind <= 0 {
			t.Fatalf("n%d from 0: behind %d, want %d", i, r.Behind, end-res[31].CommitOffset)
		}
		blue := tagFilter(message.TagsHashCode("blue"))
		if r := s.GetMessage("t", 0, 0, 32, blue); r.Status != store.Found || r.NextBeginOffset != 50 || r.Behind >= end-res[39].CommitOffset {
			t.Fatalf("n%d blue: status %d next %d behind %d", i, r.Status, r.NextBeginOffset, r.Behind)
		}
		if r := s.GetMessage("t", 0, 50, 32, nil); r.Behind != 0 {
			t.Fatalf("n%d at the end: behind %d, want 0", i, r.Behind)
		}
		if r := s.GetMessage("t", 0, 45, 32, tagFilter(1)); r.Status != store.NoMatchedMessage || r.NextBeginOffset != 50 {
			t.Fatalf("n%d no match: %+v", i, r)
		}
		for _, c := range []struct {
			offset int64
			want   store.GetStatus
			next   int64
		}{{50, store.OffsetOverflowOne, 50}, {70, store.OffsetOverflowBadly, 0}} {
			if r := s.GetMessage("t", 0, c.offset, 32, nil); r.Status != c.want || r.NextBeginOffset != c.next {
				t.Fatalf("n%d at %d: %+v, want status %d next %d", i, c.offset, r, c.want, c.next)
			}
		}
		if r := s.GetMessage("unknown", 0, 5, 32, nil); r.Status != store.NoMessageInQueue || r.NextBeginOffset != 0 {
			t.Fatalf("n%d unknown queue: %+v", i, r)
		}
		if got, _ := s.SearchOffsetByTimestamp("t", 0, 0); got != 0 {
			t.Fatalf("n%d search by time 0: %d", i, got)
		}
		if ts := s.EarliestMessageTime("t", 0); ts <= 0 || !s.FirstMessageStored("t", 0) {
			t.Fatalf("n%d earliest %d", i, ts)
		}
		rec, err := s.ReadRecord(res[3].CommitOffset)
		if err != nil || len(rec) == 0 {
			t.Fatalf("n%d ReadRecord: %v", i, err)
		}
		if _, err := s.ReadRecord(res[3].CommitOffset + 1); err == nil {
			t.Fatalf("n%d ReadRecord inside a record succeeded", i)
		}
		// Hash slots collide (1024 here): the message is among the candidates.
		offs, err := s.QueryIndex(store.IndexKey("t", "k-t-7"), 0, time.Now().Add(time.Hour).UnixMilli(), 8)
		if err != nil || !slices.Contains(offs, res[7].CommitOffset) {
			t.Fatalf("n%d index query: %v, %v", i, offs, err)
		}
	}
}

// TestWaitArrivalWakesOnDispatch: a waiter taken before a message is
// committed is woken by its dispatch, on a follower too.
func TestWaitArrivalWakesOnDispatch(t *testing.T) {
	g := startGroup(t, 3, nil)
	l := g.c.WaitLeader(5 * time.Second)
	f := (l + 1) % 3
	k := dledger.QueueKey{Topic: "w", QueueID: 0}
	leaderWake, followerWake := g.store(l).WaitArrival(k), g.store(f).WaitArrival(k)
	g.send(t, "w", 1, 1, "")
	for _, ch := range []<-chan struct{}{leaderWake, followerWake} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("no wake-up within 5 s of the commit")
		}
	}
}

// TestStartRacingClose: a Start concurrent with a Close (a node shut down
// as it begins to serve) neither races on the store's wait group nor
// leaves its loop running; a Start after Close does nothing. Under -race
// the unfixed store fails within these 200 rounds.
func TestStartRacingClose(t *testing.T) {
	for range 200 {
		cfg := store.DefaultConfig()
		cfg.Dir = t.TempDir()
		cfg.CommitLog.SegmentSize = 1 << 20
		cfg.Index.SlotNum, cfg.Index.IndexNum = 1024, 4096
		s, err := store.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { s.Start(); close(done) }()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		<-done
		s.Start()
	}
}
