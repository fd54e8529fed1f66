package client

import (
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/message"
)

// Selector picks the queue a message is sent to.
type Selector interface {
	// Select returns one of queues (a topic's writable queues, sorted by
	// broker and id, never empty) for msg. lastBroker is the broker group
	// the previous attempt of this send failed on, "" on the first attempt.
	Select(msg *message.Message, queues []MessageQueue, lastBroker string) MessageQueue
}

// SelectorFunc adapts a function to Selector.
type SelectorFunc func(msg *message.Message, queues []MessageQueue, lastBroker string) MessageQueue

// Select calls f.
func (f SelectorFunc) Select(msg *message.Message, queues []MessageQueue, lastBroker string) MessageQueue {
	return f(msg, queues, lastBroker)
}

// RoundRobinSelector returns a selector that cycles through the queues,
// avoiding lastBroker on a retry when another group has queues. It does no
// latency fault avoidance (the producer's default selector does).
func RoundRobinSelector() Selector {
	var n atomic.Uint64
	return SelectorFunc(func(_ *message.Message, qs []MessageQueue, last string) MessageQueue {
		start := n.Add(1)
		for i := range qs {
			q := qs[(start+uint64(i))%uint64(len(qs))]
			if q.BrokerName != last {
				return q
			}
		}
		return qs[start%uint64(len(qs))]
	})
}

// HashSelector returns a selector that sends every message with the same
// key to the same queue (while the topic's queue count is unchanged), for
// ordered messages. key extracts the key; nil uses the SHARDING_KEY
// property, else the first of the message's keys, else its tags. A retry
// stays on the same queue: raftmq groups fail over inside the group, so
// ordering survives a leader change.
func HashSelector(key func(*message.Message) string) Selector {
	if key == nil {
		key = defaultShardingKey
	}
	return SelectorFunc(func(m *message.Message, qs []MessageQueue, _ string) MessageQueue {
		h := fnv.New32a()
		h.Write([]byte(key(m)))
		return qs[h.Sum32()%uint32(len(qs))]
	})
}

func defaultShardingKey(m *message.Message) string {
	if k := m.Property(message.PropertyShardingKey); k != "" {
		return k
	}
	if ks := m.Keys(); len(ks) > 0 {
		return ks[0]
	}
	return m.Tags()
}

// Latency fault avoidance, as the Java client's MQFaultStrategy: a send
// that took at least latencyMax[i] makes its broker group unavailable for
// notAvailable[i]; a failure isolates it for failureIsolated.
var (
	latencyMax   = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 550 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second, 15 * time.Second}
	notAvailable = []time.Duration{0, 0, 30 * time.Second, 60 * time.Second, 120 * time.Second, 180 * time.Second, 600 * time.Second}
)

// failureIsolated is how long a failed send isolates its group. raftmq
// groups recover from a leader loss within seconds, so this is short
// rather than the Java client's 10 minutes.
const failureIsolated = 5 * time.Second

// faultSelector is the producer's default selector: round robin over the
// queues of groups not currently isolated by the latency table.
type faultSelector struct {
	rr      atomic.Uint64
	enabled bool
	now     func() time.Time

	mu    sync.Mutex
	until map[string]time.Time // broker group → isolated until
}

func newFaultSelector(enabled bool) *faultSelector {
	return &faultSelector{enabled: enabled, now: time.Now, until: map[string]time.Time{}}
}

// record notes how long a send to broker took, or that it failed.
func (f *faultSelector) record(broker string, latency time.Duration, failed bool) {
	if !f.enabled {
		return
	}
	d := time.Duration(0)
	if failed {
		d = failureIsolated
	} else {
		for i := len(latencyMax) - 1; i >= 0; i-- {
			if latency >= latencyMax[i] {
				d = notAvailable[i]
				break
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if d == 0 {
		delete(f.until, broker)
		return
	}
	f.until[broker] = f.now().Add(d)
}

func (f *faultSelector) available(broker string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.until[broker]
	return !ok || f.now().After(t)
}

// Select implements Selector: the next queue of an available group other
// than lastBroker; failing that, any queue not on lastBroker; failing that,
// the next queue (a single-group topic keeps failing over in its group).
func (f *faultSelector) Select(_ *message.Message, qs []MessageQueue, last string) MessageQueue {
	start := f.rr.Add(1)
	if f.enabled {
		for i := range qs {
			q := qs[(start+uint64(i))%uint64(len(qs))]
			if q.BrokerName != last && f.available(q.BrokerName) {
				return q
			}
		}
	}
	for i := range qs {
		q := qs[(start+uint64(i))%uint64(len(qs))]
		if q.BrokerName != last {
			return q
		}
	}
	return qs[start%uint64(len(qs))]
}
