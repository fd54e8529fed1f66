package broker

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/remoting"
)

// notifyTimeout bounds one NOTIFY_CONSUMER_IDS_CHANGED write.
const notifyTimeout = 3 * time.Second

// clientChannel is one consumer client of a group as its heartbeats
// describe it.
type clientChannel struct {
	clientID         string
	conn             *remoting.Conn
	lastSeen         time.Time
	consumeType      string
	messageModel     string
	consumeFromWhere string
	language         string // the heartbeat's
	version          int16
}

// consumerGroup is a consumer group's clients and subscriptions on this
// node (RocketMQ's ConsumerGroupInfo).
type consumerGroup struct {
	clients      map[string]*clientChannel // by client id
	subs         map[string]*subscription  // by topic
	messageModel string
}

// consumerManager holds every consumer group connected to this node and
// queues the membership notifications its changes cause.
type consumerManager struct {
	mu     sync.RWMutex
	groups map[string]*consumerGroup

	qmu     sync.Mutex
	queued  []string // groups whose members must be notified
	wake    chan struct{}
	pending map[string]bool
}

func newConsumerManager() *consumerManager {
	return &consumerManager{groups: map[string]*consumerGroup{}, wake: make(chan struct{}, 1), pending: map[string]bool{}}
}

// register records a heartbeat of ch in group with its subscriptions and
// reports whether the client is new to the group.
func (m *consumerManager) register(group string, ch *clientChannel, subs map[string]*subscription) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group]
	if g == nil {
		g = &consumerGroup{clients: map[string]*clientChannel{}}
		m.groups[group] = g
	}
	_, known := g.clients[ch.clientID]
	g.clients[ch.clientID] = ch
	g.subs = subs
	g.messageModel = ch.messageModel
	return !known
}

// unregister removes a client from group and reports whether it was there.
func (m *consumerManager) unregister(group, clientID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group]
	if g == nil {
		return false
	}
	if _, ok := g.clients[clientID]; !ok {
		return false
	}
	delete(g.clients, clientID)
	if len(g.clients) == 0 {
		delete(m.groups, group)
	}
	return true
}

// dropConn removes every client whose channel is c and returns the groups
// that lost a member.
func (m *consumerManager) dropConn(c *remoting.Conn) []string {
	return m.drop(func(ch *clientChannel) bool { return ch.conn == c })
}

// expire removes every client last seen before cutoff and returns the
// groups that lost a member.
func (m *consumerManager) expire(cutoff time.Time) []string {
	return m.drop(func(ch *clientChannel) bool { return ch.lastSeen.Before(cutoff) })
}

func (m *consumerManager) drop(match func(*clientChannel) bool) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var changed []string
	for name, g := range m.groups {
		n := len(g.clients)
		for id, ch := range g.clients {
			if match(ch) {
				delete(g.clients, id)
			}
		}
		if len(g.clients) == n {
			continue
		}
		changed = append(changed, name)
		if len(g.clients) == 0 {
			delete(m.groups, name)
		}
	}
	slices.Sort(changed)
	return changed
}

// clientIDs returns the ids of group's clients, sorted.
func (m *consumerManager) clientIDs(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[group]
	if g == nil {
		return nil
	}
	ids := make([]string, 0, len(g.clients))
	for id := range g.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// conns returns the connections of group's clients.
func (m *consumerManager) conns(group string) []*remoting.Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[group]
	if g == nil {
		return nil
	}
	out := make([]*remoting.Conn, 0, len(g.clients))
	for _, ch := range g.clients {
		out = append(out, ch.conn)
	}
	return out
}

// subscription returns group's subscription of topic, nil if unknown.
func (m *consumerManager) subscription(group, topic string) *subscription {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.groups[group]; g != nil {
		return g.subs[topic]
	}
	return nil
}

// messageModel returns the message model group's heartbeats announced, ""
// if the group is unknown here.
func (m *consumerManager) messageModel(group string) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.groups[group]; g != nil {
		return g.messageModel
	}
	return ""
}

// queueNotify schedules NOTIFY_CONSUMER_IDS_CHANGED to group's clients. It
// never blocks: connection-close hooks call it.
func (m *consumerManager) queueNotify(group string) {
	m.qmu.Lock()
	if !m.pending[group] {
		m.pending[group] = true
		m.queued = append(m.queued, group)
	}
	m.qmu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *consumerManager) takeQueued() []string {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	q := m.queued
	m.queued = nil
	clear(m.pending)
	return q
}

// notifyLoop sends the queued notifications until stop, unless a group's
// configuration turned them off.
func (m *consumerManager) notifyLoop(groups *meta.State, log hclog.Logger) func(stop <-chan struct{}) {
	return func(stop <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			case <-m.wake:
			}
			for _, g := range m.takeQueued() {
				if cfg, ok := groups.SubscriptionGroup(g); ok && !cfg.NotifyConsumerIdsChangedEnable {
					continue
				}
				m.notify(g, log)
			}
		}
	}
}

// notify tells every client of group that its membership changed, as
// RocketMQ's Broker2Client.notifyConsumerIdsChanged: a oneway request.
func (m *consumerManager) notify(group string, log hclog.Logger) {
	for _, c := range m.conns(group) {
		req := remoting.NewRequest(remoting.ReqNotifyConsumerIDsChanged, map[string]string{"consumerGroup": group}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		err := c.SendOneway(ctx, req)
		cancel()
		if err != nil {
			log.Debug("notify consumer ids changed failed", "group", group, "remote", c.RemoteAddr().String(), "error", err)
		}
	}
}

// producerManager holds the producer groups connected to this node.
type producerManager struct {
	mu     sync.Mutex
	groups map[string]map[string]*clientChannel // group → client id → channel
}

func newProducerManager() *producerManager {
	return &producerManager{groups: map[string]map[string]*clientChannel{}}
}

// register records a heartbeat of a producer and reports whether the
// client is new to the group.
func (p *producerManager) register(group string, ch *clientChannel) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.groups[group]
	if g == nil {
		g = map[string]*clientChannel{}
		p.groups[group] = g
	}
	_, known := g[ch.clientID]
	g[ch.clientID] = ch
	return !known
}

// conn returns the connection of a live producer of group, the one heard
// from last, nil when none is connected.
func (p *producerManager) conn(group string) *remoting.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *clientChannel
	for _, ch := range p.groups[group] {
		if best == nil || ch.lastSeen.After(best.lastSeen) {
			best = ch
		}
	}
	if best == nil {
		return nil
	}
	return best.conn
}

// connOf returns the connection of the client with this id, in any
// producer group, nil when it is not connected here.
func (p *producerManager) connOf(clientID string) *remoting.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.groups {
		if ch := g[clientID]; ch != nil {
			return ch.conn
		}
	}
	return nil
}

func (p *producerManager) unregister(group, clientID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g := p.groups[group]; g != nil {
		delete(g, clientID)
		if len(g) == 0 {
			delete(p.groups, group)
		}
	}
}

func (p *producerManager) dropConn(c *remoting.Conn) {
	p.drop(func(ch *clientChannel) bool { return ch.conn == c })
}

func (p *producerManager) expire(cutoff time.Time) {
	p.drop(func(ch *clientChannel) bool { return ch.lastSeen.Before(cutoff) })
}

func (p *producerManager) drop(match func(*clientChannel) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, g := range p.groups {
		for id, ch := range g {
			if match(ch) {
				delete(g, id)
			}
		}
		if len(g) == 0 {
			delete(p.groups, name)
		}
	}
}

// flight runs one function per key at a time; later callers of the same
// key wait for the running one's result.
type flight struct {
	mu    sync.Mutex
	calls map[string]*flightCall
}

type flightCall struct {
	done chan struct{}
	err  error
}

func newFlight() *flight { return &flight{calls: map[string]*flightCall{}} }

// do runs fn for key unless a run is under way, in which case it waits
// for that run's result or ctx.
func (f *flight) do(ctx context.Context, key string, fn func() error) error {
	f.mu.Lock()
	if c := f.calls[key]; c != nil {
		f.mu.Unlock()
		select {
		case <-c.done:
			return c.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c := &flightCall{done: make(chan struct{})}
	f.calls[key] = c
	f.mu.Unlock()
	c.err = fn()
	f.mu.Lock()
	delete(f.calls, key)
	f.mu.Unlock()
	close(c.done)
	return c.err
}
