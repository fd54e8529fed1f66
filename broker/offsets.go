package broker

// Offsets: consumer offsets and queue positions, as RocketMQ's
// ConsumerManageProcessor and AdminBrokerProcessor.
//
//   - QUERY_CONSUMER_OFFSET (14): the group's offset in a queue (the next
//     offset to consume), newest pending value on this node first, then
//     the committed one; with none, offset 0 if the queue starts at 0 and
//     its first message is still stored (RocketMQ's "still in memory"
//     rule), else 22 QUERY_NOT_FOUND.
//   - UPDATE_CONSUMER_OFFSET (15): answered SUCCESS at once; the offset is
//     coalesced with the node's other pending offsets into one
//     CommitOffsetsCommand (see offsets_commit.go). A follower forwards
//     the coalesced batch to the leader.
//   - GET_MAX_OFFSET (30), GET_MIN_OFFSET (31): this node's consumequeue
//     bounds, 0 for an unknown queue.
//   - SEARCH_OFFSET_BY_TIMESTAMP (29): the first offset stored at or after
//     timestamp (max offset when all are older).
//   - GET_EARLIEST_MSG_STORETIME (32): the store time of the queue's first
//     message, -1 when there is none.

import (
	"context"
	"strconv"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

// offsetService serves the offset codes.
type offsetService struct {
	rep       *replica
	store     *store.Store
	meta      *meta.State
	committer *offsetCommitter
}

func (s *offsetService) register(m mux) {
	m.HandleFunc(remoting.ReqQueryConsumerOffset, s.queryConsumerOffset)
	m.HandleFunc(remoting.ReqUpdateConsumerOffset, s.updateConsumerOffset)
	m.HandleFunc(remoting.ReqGetMaxOffset, s.maxOffset)
	m.HandleFunc(remoting.ReqGetMinOffset, s.minOffset)
	m.HandleFunc(remoting.ReqSearchOffsetByTimestamp, s.searchOffset)
	m.HandleFunc(remoting.ReqGetEarliestMsgStoreTime, s.earliestStoreTime)
	m.HandleFunc(remoting.ReqGetAllConsumerOffset, s.allConsumerOffsets)
}

// allConsumerOffsets answers GET_ALL_CONSUMER_OFFSET (43): RocketMQ's
// ConsumerOffsetSerializeWrapper, {"offsetTable":{"topic@group":{"queueId":offset}}},
// of the offsets this node applied (pending ones included).
func (s *offsetService) allConsumerOffsets(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	table := map[string]map[int32]int64{}
	add := func(k meta.OffsetKey, off int64) {
		key := k.Topic + "@" + k.Group
		if table[key] == nil {
			table[key] = map[int32]int64{}
		}
		table[key][k.QueueID] = off
	}
	for _, o := range s.meta.AllConsumerOffsets() {
		add(o.OffsetKey, o.Offset)
	}
	for k, off := range s.committer.snapshot() {
		add(k, off)
	}
	return jsonResponse(req, protocol.ConsumerOffsetWrapper{OffsetTable: table})
}

func offsetResponse(req *remoting.Command, key string, v int64) *remoting.Command {
	resp := okResponse(req)
	resp.ExtFields[key] = strconv.FormatInt(v, 10)
	return resp
}

func offsetKey(h protocol.ConsumerOffsetHeader) meta.OffsetKey {
	return meta.OffsetKey{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID}
}

func (s *offsetService) queryConsumerOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := protocol.DecodeConsumerOffsetHeader(req.ExtFields, false)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	k := offsetKey(h)
	if off, ok := s.committer.lookup(k); ok {
		return offsetResponse(req, "offset", off)
	}
	if off, ok := s.meta.ConsumerOffset(k); ok {
		return offsetResponse(req, "offset", off)
	}
	if s.store.FirstMessageStored(k.Topic, k.QueueID) {
		return offsetResponse(req, "offset", 0)
	}
	return errResponse(req, remoting.ResQueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
}

func (s *offsetService) updateConsumerOffset(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if req.ExtFields[extOffsetBatch] != "" {
		if !s.rep.isLeader() {
			return s.rep.forward(ctx, req)
		}
		return s.committer.commitForwarded(ctx, req)
	}
	h, err := protocol.DecodeConsumerOffsetHeader(req.ExtFields, true)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	s.committer.update(offsetKey(h), h.CommitOffset)
	return okResponse(req)
}

func (s *offsetService) maxOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	q, err := protocol.DecodeQueueHeader(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	return offsetResponse(req, "offset", s.store.MaxOffset(q.Topic, q.QueueID))
}

func (s *offsetService) minOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	q, err := protocol.DecodeQueueHeader(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	return offsetResponse(req, "offset", s.store.MinOffset(q.Topic, q.QueueID))
}

func (s *offsetService) searchOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	q, err := protocol.DecodeQueueHeader(req.ExtFields)
	h := protocol.ReadHeader(req.ExtFields)
	ts := h.Int64("timestamp")
	if err == nil {
		err = h.Err()
	}
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	off, err := s.store.SearchOffsetByTimestamp(q.Topic, q.QueueID, ts)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "searching %s/%d by timestamp: %v", q.Topic, q.QueueID, err)
	}
	return offsetResponse(req, "offset", off)
}

func (s *offsetService) earliestStoreTime(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	q, err := protocol.DecodeQueueHeader(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	return offsetResponse(req, "timestamp", s.store.EarliestMessageTime(q.Topic, q.QueueID))
}
