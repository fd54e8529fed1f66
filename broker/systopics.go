package broker

// System topics the broker keeps for clients, created by the leader of
// each term after its barrier when missing (RocketMQ creates them in its
// TopicConfigManager at start): the cluster's request-reply topic
// <cluster>_REPLY_TOPIC, and RMQ_SYS_TRACE_TOPIC for the clients' message
// trace (Config.TraceTopicEnable). Both have one queue, readable and
// writable.

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/protocol"
)

// systemTopics creates the system topics on the leader.
type systemTopics struct {
	rep    *replica
	topics *topicTable
	names  []string
	// registered is told when a topic was created (re-register).
	registered func()
	log        hclog.Logger
}

func newSystemTopics(rep *replica, topics *topicTable, cluster string, trace bool, registered func(), log hclog.Logger) *systemTopics {
	names := []string{protocol.ReplyTopic(cluster)}
	if trace {
		names = append(names, protocol.TraceTopic)
	}
	return &systemTopics{rep: rep, topics: topics, names: names, registered: registered, log: log}
}

// run creates the missing topics once per term, then waits for the term
// to end.
func (s *systemTopics) run(ctx context.Context) error {
	if _, err := s.rep.barrier(ctx); err != nil {
		return err
	}
	created := false
	for _, name := range s.names {
		if _, ok := s.topics.topic(name); ok {
			continue
		}
		tc := meta.TopicConfig{Name: name, ReadQueueNums: 1, WriteQueueNums: 1, Perm: protocol.PermReadWrite}
		if _, err := s.topics.ensure(ctx, tc); err != nil {
			return err
		}
		s.log.Info("system topic created", "topic", name)
		created = true
	}
	if created {
		s.registered()
	}
	<-ctx.Done()
	return nil
}
