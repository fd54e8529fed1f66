package broker

// The producer dedupe window (raftmq extension; RocketMQ has none). A send
// whose messages all carry a unique key (UNIQ_KEY, which RocketMQ clients
// set once per message and keep across their retries) and whose keys are
// already stored in the same topic within Config.DedupeWindow is answered
// with the first send's result — its offsetMsgId, queue and queue offset —
// and stores nothing. That covers a producer's retry after a lost answer,
// a timeout or a leader failover, and the follower-forwarded send whose
// answer did not come back.
//
// The memory of the window is the key index (topic#UNIQ_KEY entries with
// their store times), which every replica builds from the replicated
// commitlog as it applies it: the same on every node, kept on disk rather
// than in a map (two minutes at 50k msg/s would be six million keys), and
// bounded by time by the index query itself. A hit is checked on the
// record it points at (hash slots collide): same stored topic, same real
// topic of a parked message, same unique key, same reconsume count (a
// consumer's successive send-backs of one message are not duplicates) and
// stored inside the window.
//
// Two sends of one key at once are serialized by a leader-local in-flight
// table: the second waits for the first to finish and then finds its
// record. A new leader runs a barrier before its first lookup (replica.
// ready), so the old leader's committed sends are in its index. The index
// is best effort (a failed put is logged, not fatal): a key missing from
// it means a retried send is stored twice, at-least-once as without the
// window, never a lost message. A batch is answered from the window only
// when every one of its messages is found; otherwise it is stored whole.

import (
	"context"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wallclock"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

// dedupeShards spreads the in-flight table's lock.
const dedupeShards = 16

// dedupeWindow answers retried sends from the key index.
type dedupeWindow struct {
	window time.Duration
	rep    *replica
	store  *store.Store
	seed   maphash.Seed
	shards [dedupeShards]inflightShard
}

// inflightShard holds the keys of sends being stored; a waiter blocks on
// the channel, closed when the send finishes.
type inflightShard struct {
	mu   sync.Mutex
	keys map[string]chan struct{}
}

func newDedupeWindow(window time.Duration, rep *replica, st *store.Store) *dedupeWindow {
	if window <= 0 {
		return nil
	}
	d := &dedupeWindow{window: window, rep: rep, store: st, seed: maphash.MakeSeed()}
	for i := range d.shards {
		d.shards[i].keys = map[string]chan struct{}{}
	}
	return d
}

// check claims the index keys of msgs (the stored topic and unique key of
// each) and looks them up. It returns the answer of an earlier send of
// the same messages (then nothing is to be stored and release is nil), or
// release, to be called once the send is stored or failed. A send with a
// message without unique key is not checked (both nil).
func (d *dedupeWindow) check(ctx context.Context, sr *sendRequest, msgs []dledger.Message) (func(), *remoting.Command) {
	keys, ok := dedupeKeys(sr, msgs)
	if !ok {
		return nil, nil
	}
	release, err := d.claim(ctx, keys)
	if err != nil {
		return nil, errResponse(sr.req, remoting.ResSystemError, "send of %s waited for a send of the same unique key: %v", sr.uniqs[0], err)
	}
	if _, err := d.rep.ready(ctx); err != nil {
		release()
		return nil, errResponse(sr.req, remoting.ResSystemError, "dedupe window not ready: %v", err)
	}
	if resp := d.lookup(sr, msgs, keys); resp != nil {
		release()
		return nil, resp
	}
	return release, nil
}

// dedupeKeys are the index keys of msgs' unique keys; false when one has
// none.
func dedupeKeys(sr *sendRequest, msgs []dledger.Message) ([]string, bool) {
	if len(sr.uniqs) != len(msgs) || len(msgs) == 0 {
		return nil, false
	}
	keys := make([]string, len(msgs))
	for i, m := range msgs {
		if sr.uniqs[i] == "" {
			return nil, false
		}
		keys[i] = store.IndexKey(m.Topic, sr.uniqs[i])
	}
	return keys, true
}

// claim marks keys in flight, waiting while another send holds one. Keys
// are taken in sorted order, so two batches cannot wait on each other.
// The keys of one send share one channel, closed when it is released.
func (d *dedupeWindow) claim(ctx context.Context, keys []string) (func(), error) {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	mine := make(chan struct{})
	held := 0
	release := func() {
		for _, k := range keys[:held] {
			sh := d.shard(k)
			sh.mu.Lock()
			delete(sh.keys, k)
			sh.mu.Unlock()
		}
		close(mine)
	}
	for _, k := range keys {
		if err := d.take(ctx, k, mine); err != nil {
			release()
			return nil, err
		}
		held++
	}
	return release, nil
}

// take marks one key in flight under mine once no other send holds it.
func (d *dedupeWindow) take(ctx context.Context, key string, mine chan struct{}) error {
	sh := d.shard(key)
	for {
		sh.mu.Lock()
		busy, ok := sh.keys[key]
		if !ok {
			sh.keys[key] = mine
			sh.mu.Unlock()
			return nil
		}
		sh.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (d *dedupeWindow) shard(key string) *inflightShard {
	return &d.shards[maphash.String(d.seed, key)%dedupeShards]
}

// lookup returns the answer of the earlier send when every message of
// msgs (whose index keys are keys) is already stored inside the window.
func (d *dedupeWindow) lookup(sr *sendRequest, msgs []dledger.Message, keys []string) *remoting.Command {
	now := wallclock.UnixMilli() // the store timestamps' clock
	since := now - d.window.Milliseconds()
	found := make([]*message.MessageExt, 0, len(msgs))
	for i, m := range msgs {
		first := d.find(m, keys[i], sr.uniqs[i], sr.h.ReconsumeTimes, since, now)
		if first == nil {
			return nil
		}
		found = append(found, first)
	}
	return duplicateResponse(sr, found)
}

// find returns the stored record of m's unique key uniq (index key key)
// in m's topic, stored since since (Unix ms), or nil.
func (d *dedupeWindow) find(m dledger.Message, key, uniq string, reconsume int32, since, now int64) *message.MessageExt {
	// The index keeps store times at one-second resolution.
	offsets, err := d.store.QueryIndex(key, since-1000, now+1000, 8)
	if err != nil || len(offsets) == 0 {
		return nil
	}
	realTopic, _, _ := message.RecordProperty(m.Record, message.PropertyRealTopic)
	for _, co := range offsets {
		rec, err := d.store.ReadRecord(co)
		if err != nil {
			continue
		}
		first, _, err := message.DecodeExt(rec)
		if err != nil || first.Topic != m.Topic || first.UniqKey() != uniq || first.ReconsumeTimes != reconsume ||
			first.Property(message.PropertyRealTopic) != realTopic || first.StoreTimestamp < since {
			continue
		}
		return first
	}
	return nil
}

// duplicateResponse answers a send with the result of the earlier send
// that stored its messages, as sendResponse answered that one.
func duplicateResponse(sr *sendRequest, found []*message.MessageExt) *remoting.Command {
	ids := make([]string, len(found))
	for i, m := range found {
		ids[i] = m.MsgID()
	}
	first := found[0]
	qid := first.QueueID
	if q, err := strconv.ParseInt(first.Property(message.PropertyRealQueueID), 10, 32); err == nil {
		qid = int32(q) // a parked message answers with the queue it was sent to
	}
	resp := sendAnswer(sr, strings.Join(ids, ","), qid, first.QueueOffset)
	resp.ExtFields[extDuplicate] = "true"
	return resp
}
