package broker

// Admin: topic management. UPDATE_AND_CREATE_TOPIC (17) validates the name
// (TopicValidator: SYSTEM_ERROR), refuses system topics, checks queue counts
// (1..1024) and perm, and proposes a PutTopicCommand — on a follower the
// request is forwarded to the leader. DELETE_TOPIC_IN_BROKER (215) proposes
// a DeleteTopicCommand; every replica drops the topic's config and consumer
// offsets. Its consumequeue files stay: dledger keeps the queue counters so a
// re-created topic continues its offsets, and the QueueSink has no delete,
// so the old entries stay readable until retention trims them.
// GET_ALL_TOPIC_CONFIG (21) answers this node's applied topics as
// RocketMQ's TopicConfigSerializeWrapper. After a change the leader
// re-registers with the name servers before answering, as RocketMQ does, so
// the route exists when the admin tool returns.
//
// The other admin codes live in admin_group.go (subscription groups),
// admin_query.go (QUERY_MESSAGE, VIEW_MESSAGE_BY_ID) and admin_runtime.go
// (GET_BROKER_RUNTIME_INFO).

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/remoting"
)

func (b *Broker) registerAdmin() {
	b.handle(remoting.ReqUpdateAndCreateTopic, b.createTopic)
	b.handle(remoting.ReqDeleteTopicInBroker, b.deleteTopic)
	b.handle(remoting.ReqGetAllTopicConfig, b.allTopicConfig)
	b.registerGroupAdmin()
	b.registerQuery()
	b.registerRuntime()
}

// parseTopicExt reads a CreateTopicRequestHeader.
func parseTopicExt(ext map[string]string) (dledger.TopicConfig, error) {
	tc := dledger.TopicConfig{Name: ext["topic"]}
	if err := ValidateTopic(tc.Name); err != nil {
		return tc, err
	}
	nums := []struct {
		key string
		dst *int32
		def int32
	}{
		{"readQueueNums", &tc.ReadQueueNums, 0}, {"writeQueueNums", &tc.WriteQueueNums, 0},
		{"perm", &tc.Perm, defaultPermRW}, {"topicSysFlag", &tc.TopicSysFlag, 0},
	}
	for _, n := range nums {
		v, ok := ext[n.key]
		if !ok || v == "" {
			if n.def == 0 && n.key != "topicSysFlag" {
				return tc, fmt.Errorf("the custom field <%s> is null", n.key)
			}
			*n.dst = n.def
			continue
		}
		x, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return tc, fmt.Errorf("%s %q is not a number", n.key, v)
		}
		*n.dst = int32(x)
	}
	for _, q := range []int32{tc.ReadQueueNums, tc.WriteQueueNums} {
		if q < 1 || q > maxTopicQueues {
			return tc, fmt.Errorf("queue nums %d/%d out of range 1..%d", tc.ReadQueueNums, tc.WriteQueueNums, maxTopicQueues)
		}
	}
	if tc.Perm < 0 || tc.Perm > PermRead|PermWrite|PermInherit {
		return tc, fmt.Errorf("perm %d is not a combination of 4 (read), 2 (write), 1 (inherit)", tc.Perm)
	}
	switch ext["topicFilterType"] {
	case "", "SINGLE_TAG":
	case "MULTI_TAG":
		tc.FilterType = 1
	default:
		return tc, fmt.Errorf("topicFilterType %q is not SINGLE_TAG or MULTI_TAG", ext["topicFilterType"])
	}
	if o := ext["order"]; o != "" {
		order, err := strconv.ParseBool(o)
		if err != nil {
			return tc, fmt.Errorf("order %q is not a boolean", o)
		}
		tc.Order = order
	}
	return tc, nil
}

func (b *Broker) createTopic(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.node.IsLeader() {
		return b.forward(ctx, req)
	}
	tc, err := parseTopicExt(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "create topic: %v", err)
	}
	if tc.Name == b.cfg.Cluster || tc.Name == DefaultTopic || notAllowedSendTopics[tc.Name] {
		return errResponse(req, remoting.ResSystemError, "the topic[%s] is conflict with system topic", tc.Name)
	}
	if _, err := b.propose(ctx, &dledger.PutTopicCommand{Topic: tc}); err != nil {
		return b.proposeFailure(ctx, req, err)
	}
	b.log.Info("topic created or updated", "topic", tc.Name, "read", tc.ReadQueueNums, "write", tc.WriteQueueNums, "perm", tc.Perm)
	b.registerAll(ctx)
	return okResponse(req)
}

func (b *Broker) deleteTopic(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if !b.node.IsLeader() {
		return b.forward(ctx, req)
	}
	name := req.ExtFields["topic"]
	if err := ValidateTopic(name); err != nil {
		return errResponse(req, remoting.ResSystemError, "delete topic: %v", err)
	}
	if _, ok := b.topic(name); !ok {
		// RocketMQ answers SUCCESS for a topic it does not have.
		return okResponse(req)
	}
	if _, err := b.propose(ctx, &dledger.DeleteTopicCommand{Name: name}); err != nil {
		return b.proposeFailure(ctx, req, err)
	}
	b.log.Info("topic deleted", "topic", name)
	b.registerAll(ctx)
	return okResponse(req)
}

func (b *Broker) allTopicConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return jsonResponse(req, b.topicWrapper(b.node.Metadata().Topics()))
}

// jsonResponse is a SUCCESS answer with v as its JSON body.
func jsonResponse(req *remoting.Command, v any) *remoting.Command {
	body, err := json.Marshal(v)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "encoding answer: %v", err)
	}
	resp := okResponse(req)
	resp.Body = body
	return resp
}
