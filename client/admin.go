package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// Admin manages topics and inspects brokers, consumer groups and messages.
// It needs no Start; Close it when done.
type Admin struct {
	cfg *config
	c   *core
}

// NewAdmin returns an admin client configured by opts (WithNameServers,
// WithRequestTimeout, WithDialTimeout, WithLogger matter: an Admin sends
// no heartbeats and keeps no routes). It does no I/O.
func NewAdmin(opts ...Opt) (*Admin, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	c, err := newCore(cfg, "admin")
	if err != nil {
		return nil, err
	}
	return &Admin{cfg: cfg, c: c}, nil
}

// Close closes the admin's connections.
func (a *Admin) Close() error {
	a.c.close()
	return nil
}

// TopicConfig describes a topic to create or update.
type TopicConfig struct {
	Topic string
	// Queues is the read and write queue count per broker group (default 8).
	Queues int
	// Perm is the permission bits, 4 read | 2 write (default 6).
	Perm int
	// Order marks the topic as ordered.
	Order bool
	// Cluster, if set, restricts creation to that cluster's groups.
	Cluster string
	// BrokerName, if set, creates the topic on that group only.
	BrokerName string
	// Groups, if set, creates the topic on exactly these groups; an
	// unknown one fails the call before anything is created.
	Groups []string
}

// Placement is one broker group a topic was created on or deleted from.
type Placement struct {
	BrokerName string `json:"brokerName"`
	// Addr is the node that took the request (the group's leader when the
	// cluster info was read).
	Addr string `json:"addr"`
}

// ClusterInfo returns the name server's broker and cluster tables.
func (a *Admin) ClusterInfo(ctx context.Context) (*protocol.ClusterInfo, error) {
	var ci protocol.ClusterInfo
	req := remoting.NewRequest(remoting.ReqGetBrokerClusterInfo, nil, nil)
	if err := a.nameServerJSON(ctx, req, &ci); err != nil {
		return nil, err
	}
	return &ci, nil
}

func (a *Admin) nameServerJSON(ctx context.Context, req *remoting.Command, v any) error {
	ctx, cancel := withTimeout(ctx, a.cfg.requestTimeout)
	defer cancel()
	resp, addr, err := a.c.invokeNameServer(ctx, req)
	if err != nil {
		return err
	}
	if err := responseError(addr, req, resp); err != nil {
		return err
	}
	return decodeJSON(addr, req, resp, v)
}

// groups returns the broker groups of ci selected by cluster and name
// ("" selects all), sorted by name.
func groups(ci *protocol.ClusterInfo, cluster, name string) []protocol.BrokerData {
	var out []protocol.BrokerData
	for _, n := range slices.Sorted(maps.Keys(ci.BrokerAddrTable)) {
		bd := ci.BrokerAddrTable[n]
		if (cluster == "" || bd.Cluster == cluster) && (name == "" || n == name) {
			out = append(out, bd)
		}
	}
	return out
}

// namedGroups returns the named broker groups, or an error naming those
// the cluster info does not hold (in cluster, when set).
func namedGroups(ci *protocol.ClusterInfo, cluster string, names []string) ([]protocol.BrokerData, error) {
	var out []protocol.BrokerData
	var missing []string
	for _, n := range names {
		bd, ok := ci.BrokerAddrTable[n]
		if !ok || (cluster != "" && bd.Cluster != cluster) {
			missing = append(missing, n)
			continue
		}
		out = append(out, bd)
	}
	if len(missing) > 0 {
		known := slices.Sorted(maps.Keys(ci.BrokerAddrTable))
		return nil, fmt.Errorf("%w: %s (known: %s)", ErrBrokerNotFound, strings.Join(missing, ", "), strings.Join(known, ", "))
	}
	return out, nil
}

// ExtendTopic creates an existing topic on more broker groups, with the
// queue count, permission and order flag it has now (GET_ALL_TOPIC_CONFIG
// of the first group of its route: the route itself carries no order
// flag), so producers and consumers spread onto them at their next route
// refresh.
func (a *Admin) ExtendTopic(ctx context.Context, topic string, groups ...string) ([]Placement, error) {
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	if len(rd.BrokerDatas) == 0 {
		return nil, fmt.Errorf("%w: %s has no broker group", ErrNoRoute, topic)
	}
	tc, err := a.topicConfig(ctx, sortedBrokers(rd)[0], topic)
	if err != nil {
		return nil, err
	}
	return a.CreateTopic(ctx, TopicConfig{Topic: topic, Queues: int(max(tc.ReadQueueNums, tc.WriteQueueNums)), Perm: int(tc.Perm),
		Order: tc.Order, Groups: groups})
}

// CreateTopic creates or updates a topic on every selected broker group
// (each group's leader replicates it) and returns where it was created.
// A group without a leader address fails the call; earlier groups keep
// the topic.
func (a *Admin) CreateTopic(ctx context.Context, tc TopicConfig) ([]Placement, error) {
	if tc.Topic == "" {
		return nil, fmt.Errorf("%w: no topic", ErrInvalidOption)
	}
	ext := createTopicHeader(tc)
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	targets := groups(ci, tc.Cluster, tc.BrokerName)
	if len(tc.Groups) > 0 {
		if targets, err = namedGroups(ci, tc.Cluster, tc.Groups); err != nil {
			return nil, err
		}
	}
	var out []Placement
	for _, bd := range targets {
		addr, err := a.callGroup(ctx, bd, func() *remoting.Command {
			return remoting.NewRequest(remoting.ReqUpdateAndCreateTopic, maps.Clone(ext), nil)
		})
		if err != nil {
			return out, err
		}
		out = append(out, Placement{BrokerName: bd.BrokerName, Addr: addr})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no broker group matches cluster %q, broker %q", ErrBrokerNotFound, tc.Cluster, tc.BrokerName)
	}
	return out, nil
}

// createTopicHeader is UPDATE_AND_CREATE_TOPIC's header for tc: 8 queues
// and read|write unless tc says otherwise.
func createTopicHeader(tc TopicConfig) map[string]string {
	q := int32(cmpOr(tc.Queues, 8))
	return protocol.CreateTopicHeader{Topic: tc.Topic, DefaultTopic: protocol.DefaultTopic, ReadQueueNums: q,
		WriteQueueNums: q, Perm: int32(cmpOr(tc.Perm, protocol.PermReadWrite)),
		TopicFilterType: protocol.FilterSingleTag, Order: tc.Order}.Ext()
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// callGroup sends a request to a group's leader, then, if it cannot be
// reached, to its other nodes (which forward writes); it returns the
// address that answered SUCCESS.
func (a *Admin) callGroup(ctx context.Context, bd protocol.BrokerData, mk func() *remoting.Command) (string, error) {
	_, addr, err := a.callGroupResp(ctx, bd, mk)
	return addr, err
}

// callGroupResp is callGroup returning the answer too; a failure answer
// (an *Error) comes back with its command, so callers can read its header
// (PULL_MESSAGE's nextBeginOffset).
func (a *Admin) callGroupResp(ctx context.Context, bd protocol.BrokerData, mk func() *remoting.Command) (*remoting.Command, string, error) {
	addrs := brokerAddrs(bd)
	if len(addrs) == 0 {
		return nil, "", fmt.Errorf("%w: %s", ErrBrokerNotFound, bd.BrokerName)
	}
	var errs []error
	for _, addr := range addrs {
		resp, err := a.c.call(ctx, addr, mk())
		if err == nil {
			return resp, addr, nil
		}
		if !isFailover(err) || ctx.Err() != nil {
			return resp, addr, err
		}
		errs = append(errs, err)
	}
	return nil, "", errors.Join(errs...)
}

// DeleteTopic deletes a topic from every broker group of cluster ("" all
// clusters), then from every name server.
func (a *Admin) DeleteTopic(ctx context.Context, topic, cluster string) ([]Placement, error) {
	if topic == "" {
		return nil, fmt.Errorf("%w: no topic", ErrInvalidOption)
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []Placement
	for _, bd := range groups(ci, cluster, "") {
		addr, err := a.callGroup(ctx, bd, func() *remoting.Command {
			return remoting.NewRequest(remoting.ReqDeleteTopicInBroker, map[string]string{"topic": topic}, nil)
		})
		if err != nil {
			return out, err
		}
		out = append(out, Placement{BrokerName: bd.BrokerName, Addr: addr})
	}
	for _, ns := range a.cfg.nameServers {
		req := remoting.NewRequest(remoting.ReqDeleteTopicInNamesrv, map[string]string{"topic": topic}, nil)
		if _, err := a.c.call(ctx, ns, req); err != nil {
			return out, err
		}
	}
	return out, nil
}

// ListTopics returns every topic the name server knows.
func (a *Admin) ListTopics(ctx context.Context) ([]string, error) {
	var tl protocol.TopicList
	if err := a.nameServerJSON(ctx, remoting.NewRequest(remoting.ReqGetAllTopicListFromNameServer, nil, nil), &tl); err != nil {
		return nil, err
	}
	return tl.TopicList, nil
}

// Route fetches a topic's route from the name servers (ErrNoRoute if none
// knows it).
func (a *Admin) Route(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	ctx, cancel := withTimeout(ctx, a.cfg.requestTimeout)
	defer cancel()
	rd, err := a.c.routes.fetchData(ctx, topic)
	if err != nil {
		return nil, err
	}
	return &rd, nil
}

// BrokerRuntime returns a node's GET_BROKER_RUNTIME_INFO table (raftmq
// adds raftState, raftTerm, raftCommitIndex, ... to RocketMQ's keys).
func (a *Admin) BrokerRuntime(ctx context.Context, addr string) (map[string]string, error) {
	var info protocol.KVTable
	if err := a.c.callJSON(ctx, addr, remoting.NewRequest(remoting.ReqGetBrokerRuntimeInfo, nil, nil), &info); err != nil {
		return nil, err
	}
	return info.Table, nil
}
