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

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
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
)

// registrar registers this node with the name servers. leaderChanged and
// signal may run before start.
type registrar struct {
	rep         *replica
	meta        *meta.State
	tables      *tables
	cluster     string
	nameServers []string
	interval    time.Duration
	log         hclog.Logger
	kick        chan struct{} // capacity 1: a pending "register now"

	mu       sync.Mutex // serialises registration rounds, so the last wins
	last     []meta.TopicConfig
	lastPerm int32 // the brokerPermission last registered
	closed   bool  // unregistered for shutdown: register no more
	// lastID and lastTerm are the role this node last registered with.
	lastID   int
	lastTerm uint64
	sent     bool
}

// signal asks the loop to register now; it never blocks.
func (r *registrar) signal() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// start starts the registration loop; it registers at once.
func (r *registrar) start(bg *background) {
	if len(r.nameServers) == 0 {
		return
	}
	r.signal()
	bg.goRun(r.loop)
}

func (r *registrar) loop(stop <-chan struct{}) {
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	watch := time.NewTicker(topicWatchInterval)
	defer watch.Stop()
	for {
		select {
		case <-stop:
			return
		case <-r.kick:
		case <-tick.C:
		case <-watch.C:
			if !r.topicsChanged() {
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
		r.registerAll(ctx)
		cancel()
	}
}

// topicsChanged reports whether the applied topics differ from the ones
// last registered.
func (r *registrar) topicsChanged() bool {
	now, perm := r.meta.Topics(), r.meta.BrokerPermission()
	r.mu.Lock()
	defer r.mu.Unlock()
	return !slices.Equal(now, r.last) || perm != r.lastPerm
}

// leaderChanged is dledger's OnLeaderChange callback. It must not block:
// it only wakes the registration loop.
func (r *registrar) leaderChanged(ev dledger.LeaderEvent) {
	r.log.Info("leader changed", "leader", ev.LeaderID, "self", ev.IsLeader, "term", ev.Term)
	r.signal()
}

// brokerID is this node's brokerId in registrations: 0 as leader, else its
// 1-based position in Peers.
func (r *registrar) brokerID() int {
	if r.rep.isLeader() {
		return 0
	}
	for i, p := range r.rep.peers {
		if p.ID == r.rep.self.ID {
			return i + 1
		}
	}
	return len(r.rep.peers) + 1
}

// registerAll registers with every name server concurrently and waits for
// all of them (each bounded by ctx). Failures are logged; the next round
// retries.
func (r *registrar) registerAll(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	topics, perm := r.meta.Topics(), r.meta.BrokerPermission()
	req, err := r.registerRequest(topics)
	if err != nil {
		r.log.Error("building REGISTER_BROKER", "error", err)
		return
	}
	var wg sync.WaitGroup
	for _, ns := range r.nameServers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, registerTimeout)
			defer cancel()
			resp, err := r.rep.client.Invoke(cctx, ns, req)
			if err == nil {
				err = remoting.AsError(resp)
			}
			switch {
			case err == nil:
			case errors.Is(err, context.Canceled):
				r.log.Debug("registration cut short by shutdown", "namesrv", ns)
			default:
				r.log.Warn("register with name server failed", "namesrv", ns, "error", err)
			}
		}()
	}
	wg.Wait()
	r.last, r.lastPerm = topics, perm
}

// role is the brokerId and term to register with. A node that led and now
// knows no leader (an election is running) keeps registering as id 0 with
// its old term: the name server must never serve a route without id 0, and
// the next leader's registration, with a higher term, replaces it. Called
// with mu held.
func (r *registrar) role() (int, uint64) {
	id := r.brokerID()
	if id == 0 {
		return 0, r.rep.node.Raft().CurrentTerm()
	}
	if _, leader := r.rep.node.Leader(); leader == "" && r.sent && r.lastID == 0 {
		return 0, r.lastTerm
	}
	return id, 0
}

// registerRequest builds REGISTER_BROKER for this node's current role.
// Called with mu held.
func (r *registrar) registerRequest(topics []meta.TopicConfig) (*remoting.Command, error) {
	id, term := r.role()
	r.lastID, r.lastTerm, r.sent = id, term, true
	ext := map[string]string{
		"clusterName":  r.cluster,
		"brokerName":   r.rep.group,
		"brokerAddr":   r.rep.self.RemotingAddr,
		"brokerId":     strconv.Itoa(id),
		"haServerAddr": "",
		"compressed":   "false",
	}
	if id == 0 {
		ext["raftTerm"] = strconv.FormatUint(term, 10)
	}
	body, err := json.Marshal(protocol.RegisterBrokerBody{
		TopicConfigSerializeWrapper: r.tables.topicWrapper(topics),
		FilterServerList:            []string{},
	})
	if err != nil {
		return nil, err
	}
	return remoting.NewRequest(remoting.ReqRegisterBroker, ext, body), nil
}

// unregisterAll sends UNREGISTER_BROKER to every name server, concurrently,
// best effort, bounded by ctx. No registration round runs after it.
func (r *registrar) unregisterAll(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if len(r.nameServers) == 0 {
		return
	}
	ext := map[string]string{
		"clusterName": r.cluster,
		"brokerName":  r.rep.group,
		"brokerAddr":  r.rep.self.RemotingAddr,
		"brokerId":    strconv.Itoa(r.lastID),
	}
	req := remoting.NewRequest(remoting.ReqUnregisterBroker, ext, nil)
	var wg sync.WaitGroup
	for _, ns := range r.nameServers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, registerTimeout)
			defer cancel()
			if _, err := r.rep.client.Invoke(cctx, ns, req); err != nil {
				r.log.Debug("unregister from name server failed", "namesrv", ns, "error", err)
			}
		}()
	}
	wg.Wait()
}
