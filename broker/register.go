package broker

// Registration with the name servers. Every node registers with every name
// server in Config.NameServers, all at once and each bounded by a timeout:
// when it starts serving, every Config.RegisterInterval (RocketMQ's 30 s
// heartbeat), at once on every leader change, and whenever the applied topic
// table changes (a topic created, auto-created or deleted anywhere in the
// group). The leader registers as brokerId 0 with its raft term; a follower
// as its 1-based position in Peers (the name server renumbers followers).
// A leader that steps down while no new leader is known keeps registering
// as id 0 with its old term, so the route never lacks an id 0.
// The body lists every applied topic plus TBW102 when auto-creation is on,
// so producers find a route for unknown topics. On shutdown the node
// unregisters, best effort.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

const (
	// registerTimeout bounds one REGISTER_BROKER call to one name server.
	registerTimeout = 3 * time.Second
	// topicWatchInterval is how often the applied topic table is compared
	// with the one last registered.
	topicWatchInterval = 200 * time.Millisecond
	// defaultTopicQueueNums is the queue count TBW102 advertises
	// (RocketMQ's BrokerConfig.defaultTopicQueueNums).
	defaultTopicQueueNums = 8
)

// registrar is the registration state of a Broker. Its zero value is ready:
// leaderChanged may run before Serve starts the loop.
type registrar struct {
	once sync.Once
	kick chan struct{} // capacity 1: a pending "register now"

	mu     sync.Mutex // serialises registration rounds, so the last wins
	last   []dledger.TopicConfig
	closed bool // unregistered for shutdown: register no more
	// lastID and lastTerm are the role this node last registered with.
	lastID   int
	lastTerm uint64
	sent     bool
}

func (r *registrar) kickCh() chan struct{} {
	r.once.Do(func() { r.kick = make(chan struct{}, 1) })
	return r.kick
}

// signal asks the loop to register now; it never blocks.
func (r *registrar) signal() {
	select {
	case r.kickCh() <- struct{}{}:
	default:
	}
}

// startRegistration starts the registration loop; it registers at once.
func (b *Broker) startRegistration() {
	if len(b.cfg.NameServers) == 0 {
		return
	}
	b.reg.signal()
	b.goBackground(b.registrationLoop)
}

func (b *Broker) registrationLoop(stop <-chan struct{}) {
	tick := time.NewTicker(b.cfg.RegisterInterval)
	defer tick.Stop()
	watch := time.NewTicker(topicWatchInterval)
	defer watch.Stop()
	kick := b.reg.kickCh()
	for {
		select {
		case <-stop:
			return
		case <-kick:
		case <-tick.C:
		case <-watch.C:
			if !b.topicsChanged() {
				continue
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
		go func() { // a round must not outlive Shutdown's wait
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		b.registerAll(ctx)
		cancel()
	}
}

// topicsChanged reports whether the applied topics differ from the ones
// last registered.
func (b *Broker) topicsChanged() bool {
	now := b.node.Metadata().Topics()
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	return !slices.Equal(now, b.reg.last)
}

// leaderChanged is dledger's OnLeaderChange callback. It must not block:
// it only wakes the registration loop.
func (b *Broker) leaderChanged(ev dledger.LeaderEvent) {
	b.log.Info("leader changed", "leader", ev.LeaderID, "self", ev.IsLeader, "term", ev.Term)
	b.reg.signal()
}

// brokerID is this node's brokerId in registrations: 0 as leader, else its
// 1-based position in Peers.
func (b *Broker) brokerID() int {
	if b.node.IsLeader() {
		return 0
	}
	for i, p := range b.cfg.Peers {
		if p.ID == b.self.ID {
			return i + 1
		}
	}
	return len(b.cfg.Peers) + 1
}

// registerAll registers with every name server concurrently and waits for
// all of them (each bounded by ctx). Failures are logged; the next round
// retries.
func (b *Broker) registerAll(ctx context.Context) {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	if b.reg.closed {
		return
	}
	topics := b.node.Metadata().Topics()
	req, err := b.registerRequest(topics)
	if err != nil {
		b.log.Error("building REGISTER_BROKER", "error", err)
		return
	}
	var wg sync.WaitGroup
	for _, ns := range b.cfg.NameServers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, registerTimeout)
			defer cancel()
			resp, err := b.client.Invoke(cctx, ns, req)
			if err == nil {
				err = remoting.AsError(resp)
			}
			switch {
			case err == nil:
			case errors.Is(err, context.Canceled):
				b.log.Debug("registration cut short by shutdown", "namesrv", ns)
			default:
				b.log.Warn("register with name server failed", "namesrv", ns, "error", err)
			}
		}()
	}
	wg.Wait()
	b.reg.last = topics
}

// role is the brokerId and term to register with. A node that led and now
// knows no leader (an election is running) keeps registering as id 0 with
// its old term: the name server must never serve a route without id 0, and
// the next leader's registration, with a higher term, replaces it. Called
// with reg.mu held.
func (b *Broker) role() (int, uint64) {
	id := b.brokerID()
	if id == 0 {
		return 0, b.node.Raft().CurrentTerm()
	}
	if _, leader := b.node.Leader(); leader == "" && b.reg.sent && b.reg.lastID == 0 {
		return 0, b.reg.lastTerm
	}
	return id, 0
}

// registerRequest builds REGISTER_BROKER for this node's current role.
// Called with reg.mu held.
func (b *Broker) registerRequest(topics []dledger.TopicConfig) (*remoting.Command, error) {
	id, term := b.role()
	b.reg.lastID, b.reg.lastTerm, b.reg.sent = id, term, true
	ext := map[string]string{
		"clusterName":  b.cfg.Cluster,
		"brokerName":   b.cfg.BrokerName,
		"brokerAddr":   b.self.RemotingAddr,
		"brokerId":     strconv.Itoa(id),
		"haServerAddr": "",
		"compressed":   "false",
	}
	if id == 0 {
		ext["raftTerm"] = strconv.FormatUint(term, 10)
	}
	body, err := json.Marshal(protocol.RegisterBrokerBody{
		TopicConfigSerializeWrapper: b.topicWrapper(topics),
		FilterServerList:            []string{},
	})
	if err != nil {
		return nil, err
	}
	return remoting.NewRequest(remoting.ReqRegisterBroker, ext, body), nil
}

// defaultTopicConfig is TBW102 as RocketMQ creates it when auto-creation is
// on: readable, writable and inheritable, 8 queues.
func defaultTopicConfig() dledger.TopicConfig {
	return dledger.TopicConfig{
		Name: DefaultTopic, ReadQueueNums: defaultTopicQueueNums, WriteQueueNums: defaultTopicQueueNums,
		Perm: PermRead | PermWrite | PermInherit,
	}
}

// unregisterAll sends UNREGISTER_BROKER to every name server, concurrently,
// best effort, bounded by ctx. No registration round runs after it.
func (b *Broker) unregisterAll(ctx context.Context) {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	b.reg.closed = true
	if len(b.cfg.NameServers) == 0 {
		return
	}
	ext := map[string]string{
		"clusterName": b.cfg.Cluster,
		"brokerName":  b.cfg.BrokerName,
		"brokerAddr":  b.self.RemotingAddr,
		"brokerId":    strconv.Itoa(b.reg.lastID),
	}
	req := remoting.NewRequest(remoting.ReqUnregisterBroker, ext, nil)
	var wg sync.WaitGroup
	for _, ns := range b.cfg.NameServers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, registerTimeout)
			defer cancel()
			if _, err := b.client.Invoke(cctx, ns, req); err != nil {
				b.log.Debug("unregister from name server failed", "namesrv", ns, "error", err)
			}
		}()
	}
	wg.Wait()
}
