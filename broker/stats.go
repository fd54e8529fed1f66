package broker

// Broker statistics for VIEW_BROKER_STATS_DATA (315), as RocketMQ's
// BrokerStatsManager keeps them: per statistic name and key a running
// count (value) and number of calls (times), sampled every 10 s for the
// last minute, every minute for the last hour and every hour for the last
// day. A window's sum is the count between its oldest and newest sample,
// tps that sum per second, avgpt the sum per call.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/protocol"
)

// statsSample is one snapshot of an item.
type statsSample struct {
	at           time.Time
	value, times int64
}

// statsRing keeps the newest n samples.
type statsRing struct {
	samples []statsSample
	n       int
}

func (r *statsRing) add(s statsSample) {
	r.samples = append(r.samples, s)
	if len(r.samples) > r.n {
		r.samples = r.samples[len(r.samples)-r.n:]
	}
}

// item is the window's figures given the item's current value.
func (r *statsRing) item(now statsSample) protocol.BrokerStatsItem {
	if len(r.samples) == 0 {
		return protocol.BrokerStatsItem{}
	}
	first := r.samples[0]
	sum, times := now.value-first.value, now.times-first.times
	out := protocol.BrokerStatsItem{Sum: sum}
	if secs := now.at.Sub(first.at).Seconds(); secs > 0 {
		out.Tps = float64(sum) / secs
	}
	if times > 0 {
		out.Avgpt = float64(sum) / float64(times)
	}
	return out
}

// statsItem is one statistic of one key.
type statsItem struct {
	value, times atomic.Int64

	mu                sync.Mutex
	minute, hour, day statsRing
	lastHour, lastMin time.Time
}

func newStatsItem(now time.Time) *statsItem {
	it := &statsItem{minute: statsRing{n: 7}, hour: statsRing{n: 61}, day: statsRing{n: 25}}
	zero := statsSample{at: now}
	it.minute.add(zero)
	it.hour.add(zero)
	it.day.add(zero)
	it.lastMin, it.lastHour = now, now
	return it
}

func (it *statsItem) current(now time.Time) statsSample {
	return statsSample{at: now, value: it.value.Load(), times: it.times.Load()}
}

// sample records the item's current value in the windows due.
func (it *statsItem) sample(now time.Time) {
	s := it.current(now)
	it.mu.Lock()
	defer it.mu.Unlock()
	it.minute.add(s)
	if now.Sub(it.lastMin) >= time.Minute {
		it.hour.add(s)
		it.lastMin = now
	}
	if now.Sub(it.lastHour) >= time.Hour {
		it.day.add(s)
		it.lastHour = now
	}
}

func (it *statsItem) data(now time.Time) protocol.BrokerStatsData {
	s := it.current(now)
	it.mu.Lock()
	defer it.mu.Unlock()
	return protocol.BrokerStatsData{StatsMinute: it.minute.item(s), StatsHour: it.hour.item(s), StatsDay: it.day.item(s)}
}

// statsSampleInterval is how often every item is sampled (RocketMQ's
// minute window has six 10 s steps).
const statsSampleInterval = 10 * time.Second

type statsKey struct{ name, key string }

// brokerStats is every item of this node.
type brokerStats struct {
	mu    sync.RWMutex
	items map[statsKey]*statsItem
	now   func() time.Time
}

func newBrokerStats() *brokerStats {
	return &brokerStats{items: map[statsKey]*statsItem{}, now: time.Now}
}

// add counts v in one call of statistic name for key.
func (b *brokerStats) add(name, key string, v int64) {
	if b == nil {
		return
	}
	k := statsKey{name, key}
	b.mu.RLock()
	it := b.items[k]
	b.mu.RUnlock()
	if it == nil {
		b.mu.Lock()
		if it = b.items[k]; it == nil {
			it = newStatsItem(b.now())
			b.items[k] = it
		}
		b.mu.Unlock()
	}
	it.value.Add(v)
	it.times.Add(1)
}

// item is the statistic of name and key, nil if nothing was counted.
func (b *brokerStats) item(name, key string) *statsItem {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.items[statsKey{name, key}]
}

// get returns an item's windows, false if nothing was ever counted.
func (b *brokerStats) get(name, key string) (protocol.BrokerStatsData, bool) {
	it := b.item(name, key)
	if it == nil {
		return protocol.BrokerStatsData{}, false
	}
	return it.data(b.now()), true
}

// minuteTps is the item's per-second rate over the last minute, 0 if it
// is unknown.
func (b *brokerStats) minuteTps(name, key string) float64 {
	d, _ := b.get(name, key)
	return d.StatsMinute.Tps
}

// sampleAll records every item's current value (every 10 s).
func (b *brokerStats) sampleAll() {
	now := b.now()
	b.mu.RLock()
	items := make([]*statsItem, 0, len(b.items))
	for _, it := range b.items {
		items = append(items, it)
	}
	b.mu.RUnlock()
	for _, it := range items {
		it.sample(now)
	}
}

// tpsOver is the item's per-second rate over about the last d: from the
// newest sample at least d old (minute ring, then hour ring) to now; over
// what there is when the item is younger than d.
func (it *statsItem) tpsOver(now time.Time, d time.Duration) float64 {
	cur := it.current(now)
	it.mu.Lock()
	defer it.mu.Unlock()
	from, ok := statsSample{}, false
	for _, r := range []*statsRing{&it.minute, &it.hour} {
		for i := len(r.samples) - 1; i >= 0; i-- {
			if s := r.samples[i]; now.Sub(s.at) >= d {
				from, ok = s, true
				break
			}
		}
		if ok {
			break
		}
	}
	if !ok && len(it.hour.samples) > 0 {
		from, ok = it.hour.samples[0], true
	}
	secs := now.Sub(from.at).Seconds()
	if !ok || secs <= 0 {
		return 0
	}
	return float64(cur.value-from.value) / secs
}

// tpsTriple is RocketMQ's runtime-info rate string: messages per second
// over the last 10 s, minute and 10 minutes, "%.2f %.2f %.2f" (the form
// mqadmin clusterList and rocketmq-dashboard split on spaces).
func (b *brokerStats) tpsTriple(name, key string) string {
	it := b.item(name, key)
	if it == nil {
		return "0.00 0.00 0.00"
	}
	now := b.now()
	return fmt.Sprintf("%.2f %.2f %.2f", it.tpsOver(now, 10*time.Second),
		it.tpsOver(now, time.Minute), it.tpsOver(now, 10*time.Minute))
}

// total is the item's running count, 0 if nothing was counted.
func (b *brokerStats) total(name, key string) int64 {
	it := b.item(name, key)
	if it == nil {
		return 0
	}
	return it.value.Load()
}
