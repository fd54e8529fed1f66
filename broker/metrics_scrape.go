package broker

import (
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// Gauges computed at each scrape. Storage and dispatch are per node; the
// consumer and timer gauges come from the leader only, so that summing a
// group's nodes does not count its consumers three times.
const (
	mRaftApplyLag = "raftmq_raft_apply_lag_entries"
)

// scrapeMu keeps two scrapes from interleaving their resets.
var scrapeMu sync.Mutex

// scrapeGauges sets the computed gauges in the node's sink.
func (b *Broker) scrapeGauges(rt map[string]string) {
	scrapeMu.Lock()
	defer scrapeMu.Unlock()
	nm, s := b.nm, b.nm.sink
	s.Set(mStorageSize, float64(dirSize(b.cfg.DataDir)), nm.base)
	s.Set(mDispatchBehind, float64(max(0, b.store.MaxCommitOffset()-b.node.MaxCommitOffset())), nm.base)
	if lag, ok := numDiff(rt["raftCommitIndex"], rt["raftAppliedIndex"]); ok {
		s.Set(mRaftApplyLag, lag, nm.base)
	}
	for _, n := range []string{mLagMessages, mLagLatency, mInflight, mTimingMessages} {
		s.Reset(n)
	}
	if !b.rep.isLeader() {
		return
	}
	b.scrapeConsumers(time.Now())
	s.Set(mTimingMessages, float64(b.timingMessages()), nm.base)
}

// consumerLag is one group's lag on one topic.
type consumerLag struct {
	messages, inflight int64
	latencyMs          int64 // age of the oldest unconsumed message
}

// scrapeConsumers sets lag, lag latency and in-flight per group and topic
// from the committed offsets.
func (b *Broker) scrapeConsumers(now time.Time) {
	lags := map[meta.OffsetKey]*consumerLag{} // QueueID unused
	for _, o := range b.meta.AllConsumerOffsets() {
		k := meta.OffsetKey{Group: o.Group, Topic: o.Topic}
		l := lags[k]
		if l == nil {
			l = &consumerLag{}
			lags[k] = l
		}
		maxOff := b.store.MaxOffset(o.Topic, o.QueueID)
		if o.Offset < maxOff {
			l.messages += maxOff - o.Offset
			if ts, ok := b.storeTimeAt(o.Topic, o.QueueID, o.Offset); ok {
				l.latencyMs = max(l.latencyMs, now.UnixMilli()-ts)
			}
		}
		if next, ok := b.pull.pulledNext(o.OffsetKey); ok && next > o.Offset {
			l.inflight += min(next, maxOff) - o.Offset
		}
	}
	nm := b.nm
	for k, l := range lags {
		lb := nm.labels("topic", k.Topic, "consumer_group", k.Group)
		nm.sink.Set(mLagMessages, float64(l.messages), lb)
		nm.sink.Set(mLagLatency, float64(max(0, l.latencyMs)), lb)
		nm.sink.Set(mInflight, float64(l.inflight), lb)
	}
}

// storeTimeAt is the store timestamp (Unix ms) of a queue's message at offset.
func (b *Broker) storeTimeAt(topic string, queueID int32, offset int64) (int64, bool) {
	es, _, err := b.store.ReadEntries(topic, queueID, offset, 1, nil)
	if err != nil || len(es) == 0 {
		return 0, false
	}
	rec, err := b.store.ReadMessage(es[0].CommitOffset, int(es[0].Size))
	if err != nil {
		return 0, false
	}
	ts, err := message.RecordStoreTimestamp(rec)
	return ts, err == nil
}

// timingMessages is how many delay-level and timer messages wait on this
// leader: each level queue's messages past its delivery progress, and the
// timers in the wheel.
func (b *Broker) timingMessages() int64 {
	n := b.timers.pending.Load()
	for k, next := range b.node.Queues() {
		if k.Topic != protocol.ScheduleTopic {
			continue
		}
		done, _ := b.meta.DelayOffset(k.QueueID)
		n += max(0, next-done)
	}
	return n
}

// dirSize is the bytes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n
}
