package acl

import (
	"encoding/json"
	"strings"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// need is one resource a request touches and the permission it needs.
type need struct {
	name  string
	group bool // a consumer group (its retry topic is checked as the group)
	perm  byte
}

func (n need) kind() string {
	if n.group {
		return "group"
	}
	return "topic"
}

// topicNeed is a topic's need; a retry topic (%RETRY%group) is checked as
// its group, with SUB, as RocketMQ does.
func topicNeed(topic string, perm byte) need {
	if protocol.IsRetryTopic(topic) {
		return need{name: strings.TrimPrefix(topic, protocol.RetryPrefix), group: true, perm: protocol.ACLSub}
	}
	return need{name: topic, perm: perm}
}

func groupNeed(group string) need { return need{name: group, group: true, perm: protocol.ACLSub} }

// needs lists what req touches, following RocketMQ's PlainAccessValidator:
// sends need PUB on the topic; pulls, offsets and queries SUB on the topic
// and the group; a heartbeat SUB on every consumer group and subscribed
// topic. Other codes need only a valid signature (and admin ones an admin
// account).
func needs(req *remoting.Command) []need {
	ext := req.ExtFields
	var out []need
	add := func(n need) {
		if n.name != "" {
			out = append(out, n)
		}
	}
	switch req.Code {
	case remoting.ReqSendMessage, remoting.ReqSendBatchMessage, remoting.ReqSendReplyMessage:
		add(topicNeed(ext["topic"], protocol.ACLPub))
	case remoting.ReqSendMessageV2, remoting.ReqSendReplyMessageV2:
		add(topicNeed(ext["b"], protocol.ACLPub))
	case remoting.ReqConsumerSendMsgBack:
		add(groupNeed(ext["group"]))
	case remoting.ReqPullMessage, remoting.ReqQueryConsumerOffset, remoting.ReqUpdateConsumerOffset:
		add(topicNeed(ext["topic"], protocol.ACLSub))
		add(groupNeed(ext["consumerGroup"]))
	case remoting.ReqQueryMessage:
		add(topicNeed(ext["topic"], protocol.ACLSub))
	case remoting.ReqUnregisterClient, remoting.ReqGetConsumerListByGroup:
		add(groupNeed(ext["consumerGroup"]))
	case remoting.ReqHeartBeat:
		var hb protocol.HeartbeatData
		if json.Unmarshal(req.Body, &hb) != nil {
			return out // the handler refuses a body it cannot read
		}
		for _, c := range hb.ConsumerDataSet {
			add(groupNeed(c.GroupName))
			for _, s := range c.SubscriptionDataSet {
				if !protocol.IsRetryTopic(s.Topic) {
					add(need{name: s.Topic, perm: protocol.ACLSub})
				}
			}
		}
	}
	return out
}
