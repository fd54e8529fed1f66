package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// defaultTopicQueueNums is the queue count of a topic auto-created through
// protocol.DefaultTopic (TBW102): a producer sending to a topic no name
// server knows uses that topic's route, and the broker creates the topic
// from it.
const defaultTopicQueueNums = 4

// minRefreshGap coalesces on-demand refreshes of one topic: a burst of
// failing sends fetches the route once.
const minRefreshGap = 100 * time.Millisecond

// MessageQueue names one queue: a topic's queue on one broker group.
type MessageQueue struct {
	Topic      string
	BrokerName string
	QueueID    int32
}

// String formats the queue as topic@broker#id.
func (q MessageQueue) String() string {
	return fmt.Sprintf("%s@%s#%d", q.Topic, q.BrokerName, q.QueueID)
}

// compareQueues orders queues by topic, broker and id.
func compareQueues(a, b MessageQueue) int {
	if a.Topic != b.Topic {
		return compareStr(a.Topic, b.Topic)
	}
	if a.BrokerName != b.BrokerName {
		return compareStr(a.BrokerName, b.BrokerName)
	}
	return int(a.QueueID) - int(b.QueueID)
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Route is a topic's route as last fetched, with its queues expanded.
// A Route is immutable once published; callers must not modify it.
type Route struct {
	Topic string
	// Data is the name server's answer as received.
	Data protocol.TopicRouteData
	// WriteQueues are the queues a producer may send to: write perm on a
	// group that has a leader (id 0), sorted.
	WriteQueues []MessageQueue
	// ReadQueues are the queues a consumer may pull: read perm, sorted.
	ReadQueues []MessageQueue
	// Fetched is when the route was fetched.
	Fetched time.Time
}

// newRoute expands data into queues. writeLimit, if positive, caps each
// group's write queues (auto-creation through TBW102).
func newRoute(topic string, data protocol.TopicRouteData, writeLimit int32) *Route {
	r := &Route{Topic: topic, Data: data, Fetched: time.Now()}
	for _, qd := range data.QueueDatas {
		if protocol.Readable(qd.Perm) {
			for i := int32(0); i < qd.ReadQueueNums; i++ {
				r.ReadQueues = append(r.ReadQueues, MessageQueue{topic, qd.BrokerName, i})
			}
		}
		bd, ok := r.Broker(qd.BrokerName)
		if !protocol.Writable(qd.Perm) || !ok || bd.BrokerAddrs[0] == "" {
			continue
		}
		n := qd.WriteQueueNums
		if writeLimit > 0 {
			n = min(n, writeLimit)
		}
		for i := int32(0); i < n; i++ {
			r.WriteQueues = append(r.WriteQueues, MessageQueue{topic, qd.BrokerName, i})
		}
	}
	slices.SortFunc(r.ReadQueues, compareQueues)
	slices.SortFunc(r.WriteQueues, compareQueues)
	return r
}

// Broker returns the named group's addresses.
func (r *Route) Broker(name string) (protocol.BrokerData, bool) {
	for _, bd := range r.Data.BrokerDatas {
		if bd.BrokerName == name {
			return bd, true
		}
	}
	return protocol.BrokerData{}, false
}

// brokerAddrs lists a group's addresses, the leader (id 0) first, then the
// others by id.
func brokerAddrs(bd protocol.BrokerData) []string {
	ids := slices.Sorted(maps.Keys(bd.BrokerAddrs))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if a := bd.BrokerAddrs[id]; a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// routeCache holds the routes of the topics a client uses, fetched from
// the name servers and refreshed periodically and on demand. It also keeps
// the union of every broker group seen, for heartbeats and admin calls.
type routeCache struct {
	c      *core
	nsNext atomic.Uint32 // index of the name server to ask first

	mu      sync.Mutex
	routes  map[string]*Route
	flights map[string]*routeFlight
	brokers map[string]protocol.BrokerData
}

// routeFlight is one fetch in progress, shared by concurrent callers.
type routeFlight struct {
	done  chan struct{}
	route *Route
	err   error
}

func newRouteCache(c *core) *routeCache {
	return &routeCache{c: c, routes: map[string]*Route{}, flights: map[string]*routeFlight{},
		brokers: map[string]protocol.BrokerData{}}
}

// cached returns the topic's route without fetching.
func (rc *routeCache) cached(topic string) (*Route, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	r, ok := rc.routes[topic]
	return r, ok
}

// get returns the cached route, fetching it on first use.
func (rc *routeCache) get(ctx context.Context, topic string) (*Route, error) {
	if r, ok := rc.cached(topic); ok {
		return r, nil
	}
	return rc.refresh(ctx, topic)
}

// refresh fetches the topic's route now, unless a fetch is in flight (then
// it shares that one) or the cached route is younger than minRefreshGap.
func (rc *routeCache) refresh(ctx context.Context, topic string) (*Route, error) {
	rc.mu.Lock()
	if r, ok := rc.routes[topic]; ok && time.Since(r.Fetched) < minRefreshGap {
		rc.mu.Unlock()
		return r, nil
	}
	f, inFlight := rc.flights[topic]
	if !inFlight {
		f = &routeFlight{done: make(chan struct{})}
		rc.flights[topic] = f
	}
	rc.mu.Unlock()
	if !inFlight {
		go rc.fly(topic, f)
	}
	select {
	case <-f.done:
		return f.route, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fly runs one fetch on its own timeout, so a caller giving up does not
// fail the others waiting on it.
func (rc *routeCache) fly(topic string, f *routeFlight) {
	ctx, cancel := context.WithTimeout(context.Background(), rc.c.cfg.requestTimeout)
	defer cancel()
	f.route, f.err = rc.fetch(ctx, topic)
	rc.mu.Lock()
	delete(rc.flights, topic)
	if f.err == nil {
		rc.routes[topic] = f.route
		for _, bd := range f.route.Data.BrokerDatas {
			rc.brokers[bd.BrokerName] = bd
		}
	}
	rc.mu.Unlock()
	close(f.done)
	if f.err == nil {
		rc.c.routeChanged(f.route)
	}
}

// fetch asks the name servers for the topic's route, one at a time
// starting with the last that answered.
func (rc *routeCache) fetch(ctx context.Context, topic string) (*Route, error) {
	data, err := rc.fetchData(ctx, topic)
	if errors.Is(err, ErrNoRoute) && rc.c.autoCreate {
		data, err = rc.fetchData(ctx, protocol.DefaultTopic)
		if err == nil {
			return newRoute(topic, data, defaultTopicQueueNums), nil
		}
	}
	if err != nil {
		return nil, err
	}
	return newRoute(topic, data, 0), nil
}

func (rc *routeCache) fetchData(ctx context.Context, topic string) (protocol.TopicRouteData, error) {
	var data protocol.TopicRouteData
	req := remoting.NewRequest(remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
	resp, addr, err := rc.c.invokeNameServer(ctx, req)
	if err != nil {
		return data, err
	}
	if resp.Code == remoting.ResTopicNotExist {
		return data, fmt.Errorf("%w %s (name server %s: %s)", ErrNoRoute, topic, addr, resp.Remark)
	}
	if err := responseError(addr, req, resp); err != nil {
		return data, err
	}
	if err := json.Unmarshal(resp.Body, &data); err != nil {
		return data, fmt.Errorf("client: route of %s from %s: %w", topic, addr, err)
	}
	return data, nil
}

// topics lists the cached topics.
func (rc *routeCache) topics() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Sorted(maps.Keys(rc.routes))
}

// brokerAddrsAll returns every address of every broker group seen.
func (rc *routeCache) brokerAddrsAll() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(rc.brokers)) {
		for _, a := range brokerAddrs(rc.brokers[name]) {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// brokerGroup returns the addresses last seen for a broker group.
func (rc *routeCache) brokerGroup(name string) (protocol.BrokerData, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	bd, ok := rc.brokers[name]
	return bd, ok
}

// refreshAll fetches every cached topic's route again; failures keep the
// old route (logged).
func (rc *routeCache) refreshAll(ctx context.Context) {
	for _, t := range rc.topics() {
		if _, err := rc.refresh(ctx, t); err != nil {
			rc.c.log.Debug("route refresh failed", "topic", t, "error", err)
		}
	}
}
