package broker

// Admin: message lookups, answered from this node's own commitlog and index
// (any replica: commit offsets are the same everywhere).
//
// QUERY_MESSAGE (12; ext topic, key, maxNum, beginTimestamp, endTimestamp)
// asks the index for topic#key in the time range, reads each candidate and
// keeps those whose topic matches, whose KEYS contain key or whose UNIQ_KEY
// is key (hash slots collide), and whose store time really is in range;
// the body is the matching records concatenated, newest first, at most
// maxNum (capped at 64, RocketMQ's maxMsgsNumBatch; 32 for a unique-key
// query, flagged by _UNIQUE_KEY_QUERY). None: QUERY_NOT_FOUND.
//
// VIEW_MESSAGE_BY_ID (33; ext offset = the commit offset an offsetMsgId
// holds) answers the stored record, SYSTEM_ERROR if there is none.

import (
	"context"
	"slices"
	"strconv"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

const (
	maxQueryNum      = 64 // RocketMQ maxMsgsNumBatch
	uniqKeyQueryNum  = 32 // RocketMQ defaultQueryMaxNum
	candidatesPerHit = 4  // index candidates read per wanted result (hash collisions)
)

// queryAdmin serves the message lookups.
type queryAdmin struct {
	store *store.Store
	node  *dledger.Node
}

func (a *queryAdmin) register(m mux) {
	m.HandleFunc(remoting.ReqQueryMessage, a.queryMessage)
	m.HandleFunc(remoting.ReqViewMessageByID, a.viewMessage)
}

func (a *queryAdmin) queryMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	q, err := protocol.DecodeQueryMessageHeader(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "query message: %v", err)
	}
	n := int(q.MaxNum)
	if q.UniqueKey {
		n = uniqKeyQueryNum
	}
	n = min(max(n, 1), maxQueryNum)
	offsets, err := a.store.QueryIndex(store.IndexKey(q.Topic, q.Key), q.BeginTimestamp, q.EndTimestamp, n*candidatesPerHit)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "query index: %v", err)
	}
	var body []byte
	var found int
	var lastStore int64
	for _, co := range offsets {
		if found == n {
			break
		}
		rec, err := a.store.ReadRecord(co)
		if err != nil {
			continue // retention may have removed it since it was indexed
		}
		m, _, err := message.DecodeExt(rec)
		if err != nil || !queryMatches(q, m) {
			continue
		}
		body = append(body, rec...)
		found++
		lastStore = max(lastStore, m.StoreTimestamp)
	}
	if found == 0 {
		return errResponse(req, remoting.ResQueryNotFound, "can not find message, maybe time range not correct (topic %s, key %s)", q.Topic, q.Key)
	}
	resp := okResponse(req)
	resp.Body = body
	// The index does not expose its own high-water marks; the newest match
	// and the applied commit offset stand in for them.
	resp.ExtFields["indexLastUpdateTimestamp"] = strconv.FormatInt(lastStore, 10)
	resp.ExtFields["indexLastUpdatePhyoffset"] = strconv.FormatInt(a.node.MaxCommitOffset(), 10)
	return resp
}

// queryMatches reports whether a candidate the index returned is really a
// match: topic, key or unique key, store time in range.
func queryMatches(q protocol.QueryMessageHeader, m *message.MessageExt) bool {
	if m.Topic != q.Topic || m.StoreTimestamp < q.BeginTimestamp || m.StoreTimestamp > q.EndTimestamp {
		return false
	}
	return m.UniqKey() == q.Key || slices.Contains(m.Keys(), q.Key)
}

func (a *queryAdmin) viewMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	co, err := strconv.ParseInt(req.ExtFields["offset"], 10, 64)
	if err != nil || co < 0 {
		return errResponse(req, remoting.ResSystemError, "view message: offset %q is not a commit offset", req.ExtFields["offset"])
	}
	rec, err := a.store.ReadRecord(co)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "can not find message by the offset, %d: %v", co, err)
	}
	resp := okResponse(req)
	resp.Body = rec
	return resp
}
