package broker

// Admin: client connections and the commands the broker relays to
// consumers, as RocketMQ's AdminBrokerProcessor and Broker2Client.
//
//   - GET_CONSUMER_CONNECTION_LIST (203, ext consumerGroup):
//     ConsumerConnection of the group's clients connected here;
//     CONSUMER_NOT_ONLINE when none is.
//   - GET_PRODUCER_CONNECTION_LIST (204, ext producerGroup):
//     ProducerConnection; SYSTEM_ERROR when the group has none here.
//   - GET_CONSUMER_RUNNING_INFO (307, ext consumerGroup, clientId,
//     jstackEnable): relayed to that client, whose answer (its
//     ConsumerRunningInfo) is returned as is.
//   - INVOKE_BROKER_TO_RESET_OFFSET (222, ext topic, group, timestamp —
//     ms, or -1 for the end —, isForce; RocketMQ 5's queueId and offset
//     reset one queue to an offset): computes each queue's new offset (the
//     first message stored at or after timestamp; without isForce a queue
//     only moves back), commits them through raft on the leader, then
//     sends RESET_CONSUMER_CLIENT_OFFSET (220) with the table to every
//     client of the group connected here and answers the table. Unlike
//     RocketMQ, whose broker only tells online clients (and answers
//     CONSUMER_NOT_ONLINE when there are none, leaving the tool to commit
//     offsets itself), the reset is committed whether or not consumers
//     are online, so it holds for consumers that start later too.

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

// relayTimeout bounds a request relayed to a client (RocketMQ waits 10 s).
const relayTimeout = 10 * time.Second

// connAdmin serves the connection, running-info and reset codes.
type connAdmin struct {
	rep       *replica
	store     *store.Store
	meta      *meta.State
	committer *offsetCommitter
	consumers *consumerManager
	producers *producerManager
	log       hclog.Logger
}

func (a *connAdmin) register(m mux) {
	m.HandleFunc(remoting.ReqGetConsumerConnectionList, a.consumerConnections)
	m.HandleFunc(remoting.ReqGetProducerConnectionList, a.producerConnections)
	m.HandleFunc(remoting.ReqGetConsumerRunningInfo, a.runningInfo)
	m.HandleFunc(remoting.ReqInvokeBrokerToResetOffset, a.rep.leaderOnly(a.resetOffset))
}

func (a *connAdmin) consumerConnections(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	group := req.ExtFields["consumerGroup"]
	cc, ok := a.consumers.connection(group)
	if !ok {
		return errResponse(req, remoting.ResConsumerNotOnline, "the consumer group[%s] not online", group)
	}
	return jsonResponse(req, cc)
}

func (a *connAdmin) producerConnections(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	group := req.ExtFields["producerGroup"]
	conns := a.producers.connections(group)
	if len(conns) == 0 {
		return errResponse(req, remoting.ResSystemError, "the producer group[%s] not exist", group)
	}
	return jsonResponse(req, protocol.ProducerConnection{ConnectionSet: conns})
}

func (a *connAdmin) runningInfo(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	group, clientID := req.ExtFields["consumerGroup"], req.ExtFields["clientId"]
	conn := a.consumers.conn(group, clientID)
	if conn == nil {
		return errResponse(req, remoting.ResSystemError, "The Consumer <%s> <%s> not online", group, clientID)
	}
	ext := map[string]string{"consumerGroup": group, "clientId": clientID, "jstackEnable": req.ExtFields["jstackEnable"]}
	ctx, cancel := context.WithTimeout(ctx, relayTimeout)
	defer cancel()
	cresp, err := conn.Invoke(ctx, remoting.NewRequest(remoting.ReqGetConsumerRunningInfo, ext, nil))
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "invoke consumer %s of %s: %v", clientID, group, err)
	}
	resp := remoting.NewResponse(req, cresp.Code, cresp.Remark)
	resp.Body = cresp.Body
	return resp
}

// resetRequest is INVOKE_BROKER_TO_RESET_OFFSET's header.
type resetRequest struct {
	topic, group string
	timestamp    int64
	force        bool
	queueID      int32 // -1: every queue
	offset       int64 // with queueID: the offset to set
}

func decodeReset(ext map[string]string) (resetRequest, error) {
	h := protocol.ReadHeader(ext)
	r := resetRequest{topic: h.Str("topic"), group: h.Str("group"), timestamp: h.OptInt64("timestamp", -1),
		force: strings.EqualFold(ext["isForce"], "true"), queueID: h.OptInt32("queueId", -1), offset: h.OptInt64("offset", -1)}
	return r, h.Err()
}

func (a *connAdmin) resetOffset(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	r, err := decodeReset(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	tc, ok := a.meta.Topic(r.topic)
	if !ok {
		return errResponse(req, remoting.ResSystemError, "[reset-offset] reset offset failed, no topic in this broker. topic=%s", r.topic)
	}
	if r.queueID >= tc.WriteQueueNums {
		return errResponse(req, remoting.ResSystemError, "[reset-offset] topic %s has no queue %d", r.topic, r.queueID)
	}
	if _, err := a.rep.ready(ctx); err != nil {
		return a.rep.proposeFailure(ctx, req, err)
	}
	table, offs, err := a.resetTable(r, tc)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "[reset-offset] %v", err)
	}
	if err := a.committer.reset(ctx, offs); err != nil {
		return a.rep.proposeFailure(ctx, req, err)
	}
	a.log.Info("consumer offsets reset", "group", r.group, "topic", r.topic, "timestamp", r.timestamp, "queues", len(offs))
	a.notifyReset(ctx, r, table)
	return fastJSONResponse(req, protocol.ResetOffsetBody{OffsetTable: table})
}

// resetTable computes every reset queue's new offset.
func (a *connAdmin) resetTable(r resetRequest, tc meta.TopicConfig) (protocol.MQMap[int64], []meta.ConsumerOffset, error) {
	table := protocol.MQMap[int64]{}
	var offs []meta.ConsumerOffset
	for i := range tc.WriteQueueNums {
		if r.queueID >= 0 && i != r.queueID {
			continue
		}
		k := meta.OffsetKey{Group: r.group, Topic: r.topic, QueueID: i}
		target, err := a.target(r, i)
		if err != nil {
			return nil, nil, err
		}
		cur := a.current(k)
		if !r.force && r.queueID < 0 && cur >= 0 && target >= cur {
			target = cur
		}
		table[protocol.MessageQueue{Topic: r.topic, BrokerName: a.rep.group, QueueID: i}] = target
		offs = append(offs, meta.ConsumerOffset{OffsetKey: k, Offset: target})
	}
	return table, offs, nil
}

// target is queue i's offset for the reset, within the queue's range.
func (a *connAdmin) target(r resetRequest, i int32) (int64, error) {
	lo, hi := a.store.MinOffset(r.topic, i), a.store.MaxOffset(r.topic, i)
	switch {
	case r.queueID >= 0 && r.offset >= 0:
		return min(max(r.offset, lo), hi), nil
	case r.timestamp < 0:
		return hi, nil
	}
	off, err := a.store.SearchOffsetByTimestamp(r.topic, i, r.timestamp)
	if err != nil {
		return 0, err
	}
	return min(max(off, lo), hi), nil
}

func (a *connAdmin) current(k meta.OffsetKey) int64 {
	if off, ok := a.committer.lookup(k); ok {
		return off
	}
	if off, ok := a.meta.ConsumerOffset(k); ok {
		return off
	}
	return -1
}

// notifyReset sends RESET_CONSUMER_CLIENT_OFFSET to the group's clients
// connected here, oneway as RocketMQ does.
func (a *connAdmin) notifyReset(ctx context.Context, r resetRequest, table protocol.MQMap[int64]) {
	body, err := protocol.MarshalFastJSON(protocol.ResetOffsetBody{OffsetTable: table})
	if err != nil {
		return
	}
	ext := map[string]string{"topic": r.topic, "group": r.group, "timestamp": strconv.FormatInt(r.timestamp, 10)}
	for _, c := range a.consumers.conns(r.group) {
		cctx, cancel := context.WithTimeout(ctx, notifyTimeout)
		if err := c.SendOneway(cctx, remoting.NewRequest(remoting.ReqResetConsumerClientOffset, ext, body)); err != nil {
			a.log.Warn("reset offset: telling a consumer failed", "group", r.group, "remote", c.RemoteAddr().String(), "error", err)
		}
		cancel()
	}
}
