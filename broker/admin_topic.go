package broker

// Admin: topic management. UPDATE_AND_CREATE_TOPIC (17) validates the name
// (TopicValidator: SYSTEM_ERROR), refuses system topics, checks queue counts
// (1..1024) and perm, and proposes a PutTopicCommand — on a follower the
// request is forwarded to the leader. DELETE_TOPIC_IN_BROKER (215) proposes
// a DeleteTopicCommand; every replica drops the topic's config and consumer
// offsets. Its consumequeue files stay: dledger keeps the queue counters so a
// re-created topic continues its offsets, and the store has no delete,
// so the old entries stay readable until retention trims them.
// GET_ALL_TOPIC_CONFIG (21) answers this node's applied topics as
// RocketMQ's TopicConfigSerializeWrapper. After a change the leader
// re-registers with the name servers before answering, as RocketMQ does, so
// the route exists when the admin tool returns.
//
// The other admin codes live in admin_group.go (subscription groups),
// admin_query.go (QUERY_MESSAGE, VIEW_MESSAGE_BY_ID), admin_raft.go
// (raftmq's membership codes) and admin_runtime.go
// (GET_BROKER_RUNTIME_INFO).

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// topicAdmin serves the topic admin codes.
type topicAdmin struct {
	rep    *replica
	meta   *meta.State
	tables *tables
	// cluster is refused as a topic name, as RocketMQ does.
	cluster     string
	registerAll func(ctx context.Context)
	log         hclog.Logger
}

func (a *topicAdmin) register(m mux) {
	m.HandleFunc(remoting.ReqUpdateAndCreateTopic, a.rep.leaderOnly(a.createTopic))
	m.HandleFunc(remoting.ReqDeleteTopicInBroker, a.rep.leaderOnly(a.deleteTopic))
	m.HandleFunc(remoting.ReqGetAllTopicConfig, a.allTopicConfig)
}

// parseTopicHeader reads a CreateTopicRequestHeader into a topic config.
func parseTopicHeader(ext map[string]string) (meta.TopicConfig, error) {
	if err := protocol.ValidateTopic(ext["topic"]); err != nil {
		return meta.TopicConfig{Name: ext["topic"]}, err
	}
	h, err := protocol.DecodeCreateTopicHeader(ext)
	tc := meta.TopicConfig{Name: h.Topic, ReadQueueNums: h.ReadQueueNums, WriteQueueNums: h.WriteQueueNums,
		Perm: h.Perm, TopicSysFlag: h.TopicSysFlag, Order: h.Order}
	if err != nil {
		return tc, err
	}
	for _, q := range []int32{tc.ReadQueueNums, tc.WriteQueueNums} {
		if q < 1 || q > protocol.MaxQueueNums {
			return tc, fmt.Errorf("queue nums %d/%d out of range 1..%d", tc.ReadQueueNums, tc.WriteQueueNums, protocol.MaxQueueNums)
		}
	}
	if !protocol.ValidPerm(tc.Perm) {
		return tc, fmt.Errorf("perm %d is not a combination of 4 (read), 2 (write), 1 (inherit)", tc.Perm)
	}
	switch h.TopicFilterType {
	case protocol.FilterSingleTag:
	case protocol.FilterMultiTag:
		tc.FilterType = 1
	default:
		return tc, fmt.Errorf("topicFilterType %q is not %s or %s", h.TopicFilterType, protocol.FilterSingleTag, protocol.FilterMultiTag)
	}
	return tc, nil
}

func (a *topicAdmin) createTopic(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	tc, err := parseTopicHeader(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "create topic: %v", err)
	}
	if tc.Name == a.cluster || tc.Name == protocol.DefaultTopic || protocol.SendForbidden(tc.Name) {
		return errResponse(req, remoting.ResSystemError, "the topic[%s] is conflict with system topic", tc.Name)
	}
	if _, err := a.rep.propose(ctx, &meta.PutTopicCommand{Topic: tc}); err != nil {
		return a.rep.proposeFailure(ctx, req, err)
	}
	a.log.Info("topic created or updated", "topic", tc.Name, "read", tc.ReadQueueNums, "write", tc.WriteQueueNums, "perm", tc.Perm)
	a.registerAll(ctx)
	return okResponse(req)
}

func (a *topicAdmin) deleteTopic(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	name := req.ExtFields["topic"]
	if err := protocol.ValidateTopic(name); err != nil {
		return errResponse(req, remoting.ResSystemError, "delete topic: %v", err)
	}
	if _, ok := a.meta.Topic(name); !ok {
		// RocketMQ answers SUCCESS for a topic it does not have.
		return okResponse(req)
	}
	if _, err := a.rep.propose(ctx, &meta.DeleteTopicCommand{Name: name}); err != nil {
		return a.rep.proposeFailure(ctx, req, err)
	}
	a.log.Info("topic deleted", "topic", name)
	a.registerAll(ctx)
	return okResponse(req)
}

func (a *topicAdmin) allTopicConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return jsonResponse(req, a.tables.topicWrapper(a.meta.Topics()))
}
