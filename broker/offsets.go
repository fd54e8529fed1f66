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

	"github.com/raftmq/raftmq/consumequeue"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// storeTimePrefix is enough of a record to hold STORETIMESTAMP with
// IPv6 hosts.
const storeTimePrefix = 128

func (b *Broker) registerOffsets() {
	b.offsetCommits = newOffsetCommitter(b)
	b.handle(remoting.ReqQueryConsumerOffset, b.handleQueryConsumerOffset)
	b.handle(remoting.ReqUpdateConsumerOffset, b.handleUpdateConsumerOffset)
	b.handle(remoting.ReqGetMaxOffset, b.handleGetMaxOffset)
	b.handle(remoting.ReqGetMinOffset, b.handleGetMinOffset)
	b.handle(remoting.ReqSearchOffsetByTimestamp, b.handleSearchOffset)
	b.handle(remoting.ReqGetEarliestMsgStoreTime, b.handleEarliestStoreTime)
}

// startOffsets starts the offset commit loop.
func (b *Broker) startOffsets() { b.goBackground(b.offsetCommits.run) }

// parseOffsetKey reads consumerGroup, topic and queueId.
func parseOffsetKey(ext map[string]string) (dledger.OffsetKey, error) {
	p := headerParser{ext: ext}
	k := dledger.OffsetKey{Group: p.str("consumerGroup"), Topic: p.str("topic"), QueueID: int32(p.int("queueId", 32, true))}
	return k, p.err
}

// parseQueue reads topic and queueId.
func parseQueue(ext map[string]string) (string, int32, error) {
	p := headerParser{ext: ext}
	topic, id := p.str("topic"), int32(p.int("queueId", 32, true))
	return topic, id, p.err
}

func offsetResponse(req *remoting.Command, key string, v int64) *remoting.Command {
	resp := okResponse(req)
	resp.ExtFields[key] = strconv.FormatInt(v, 10)
	return resp
}

func (b *Broker) handleQueryConsumerOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	k, err := parseOffsetKey(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	if off, ok := b.offsetCommits.lookup(k); ok {
		return offsetResponse(req, "offset", off)
	}
	if off, ok := b.node.Metadata().ConsumerOffset(k); ok {
		return offsetResponse(req, "offset", off)
	}
	if b.firstMessageStored(k.Topic, k.QueueID) {
		return offsetResponse(req, "offset", 0)
	}
	return errResponse(req, remoting.ResQueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
}

// firstMessageStored reports whether a queue starts at offset 0 and its
// first message (if any) is still in the commitlog.
func (b *Broker) firstMessageStored(topic string, queueID int32) bool {
	q, ok := b.cq.Lookup(topic, queueID)
	if !ok {
		return true
	}
	if q.MinOffset() > 0 {
		return false
	}
	e, err := q.Get(0)
	if err != nil {
		return q.MaxOffset() == 0
	}
	_, err = b.clog.ReadMessage(nil, e.CommitOffset, int(min(e.Size, storeTimePrefix)))
	return err == nil
}

func (b *Broker) handleUpdateConsumerOffset(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if req.ExtFields[extOffsetBatch] != "" {
		if !b.node.IsLeader() {
			return b.forward(ctx, req)
		}
		return b.commitBatch(ctx, req)
	}
	k, err := parseOffsetKey(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	p := headerParser{ext: req.ExtFields}
	off := p.int("commitOffset", 64, true)
	if p.err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", p.err)
	}
	b.offsetCommits.update(k, off)
	return okResponse(req)
}

func (b *Broker) handleGetMaxOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, id, err := parseQueue(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	var off int64
	if q, ok := b.cq.Lookup(topic, id); ok {
		off = q.MaxOffset()
	}
	return offsetResponse(req, "offset", off)
}

func (b *Broker) handleGetMinOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, id, err := parseQueue(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	var off int64
	if q, ok := b.cq.Lookup(topic, id); ok {
		off = q.MinOffset()
	}
	return offsetResponse(req, "offset", off)
}

func (b *Broker) handleSearchOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, id, err := parseQueue(req.ExtFields)
	p := headerParser{ext: req.ExtFields}
	ts := p.int("timestamp", 64, true)
	if err == nil {
		err = p.err
	}
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	q, ok := b.cq.Lookup(topic, id)
	if !ok {
		return offsetResponse(req, "offset", 0)
	}
	off, err := q.SearchByTimestamp(ts, b.storeTime)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "searching %s/%d by timestamp: %v", topic, id, err)
	}
	return offsetResponse(req, "offset", off)
}

func (b *Broker) handleEarliestStoreTime(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, id, err := parseQueue(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	ts := int64(-1)
	if q, ok := b.cq.Lookup(topic, id); ok {
		if e, err := q.Get(q.MinOffset()); err == nil {
			if t, err := b.storeTime(e); err == nil {
				ts = t
			}
		}
	}
	return offsetResponse(req, "timestamp", ts)
}

// storeTime reads a message's store timestamp from its record.
func (b *Broker) storeTime(e consumequeue.Entry) (int64, error) {
	var buf [storeTimePrefix]byte
	rec, err := b.clog.ReadMessage(buf[:0], e.CommitOffset, int(min(e.Size, storeTimePrefix)))
	if err != nil {
		return 0, err
	}
	return message.RecordStoreTimestamp(rec)
}
