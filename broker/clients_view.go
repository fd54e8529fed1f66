package broker

// Read-only views of the connected clients for the admin codes.

import (
	"slices"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

func (ch *clientChannel) connection() protocol.Connection {
	addr := ""
	if ch.conn != nil {
		addr = ch.conn.RemoteAddr().String()
	}
	return protocol.Connection{ClientID: ch.clientID, ClientAddr: addr, Language: ch.language, Version: int32(ch.version)}
}

func sortConnections(cs []protocol.Connection) []protocol.Connection {
	slices.SortFunc(cs, func(a, b protocol.Connection) int {
		if a.ClientID < b.ClientID {
			return -1
		}
		if a.ClientID > b.ClientID {
			return 1
		}
		return 0
	})
	return cs
}

// connection is group's ConsumerConnection, false when no client of it is
// connected here.
func (m *consumerManager) connection(group string) (protocol.ConsumerConnection, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[group]
	if g == nil || len(g.clients) == 0 {
		return protocol.ConsumerConnection{}, false
	}
	out := protocol.ConsumerConnection{SubscriptionTable: map[string]protocol.SubscriptionData{}, MessageModel: g.messageModel}
	for _, ch := range g.clients {
		out.ConnectionSet = append(out.ConnectionSet, ch.connection())
		out.ConsumeType, out.ConsumeFromWhere = ch.consumeType, ch.consumeFromWhere
	}
	sortConnections(out.ConnectionSet)
	for topic, s := range g.subs {
		out.SubscriptionTable[topic] = s.wire
	}
	return out, true
}

// conn returns the connection of group's client clientID, nil if it is
// not connected here.
func (m *consumerManager) conn(group, clientID string) *remoting.Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.groups[group]; g != nil {
		if ch := g.clients[clientID]; ch != nil {
			return ch.conn
		}
	}
	return nil
}

// groupsOf returns the groups connected here that subscribe to topic.
func (m *consumerManager) groupsOf(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for name, g := range m.groups {
		if _, ok := g.subs[topic]; ok {
			out = append(out, name)
		}
	}
	return out
}

// topicsOf returns the topics group's connected clients subscribe to.
func (m *consumerManager) topicsOf(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	if g := m.groups[group]; g != nil {
		for topic := range g.subs {
			out = append(out, topic)
		}
	}
	return out
}

// online returns the groups with a client connected here.
func (m *consumerManager) online() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.groups))
	for name := range m.groups {
		out = append(out, name)
	}
	return out
}

// connections returns group's producer connections here.
func (p *producerManager) connections(group string) []protocol.Connection {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []protocol.Connection
	for _, ch := range p.groups[group] {
		out = append(out, ch.connection())
	}
	return sortConnections(out)
}
