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
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"

	"github.com/raftmq/raftmq/indexfile"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

const (
	maxQueryNum       = 64 // RocketMQ maxMsgsNumBatch
	uniqKeyQueryNum   = 32 // RocketMQ defaultQueryMaxNum
	uniqueQueryFlag   = "_UNIQUE_KEY_QUERY"
	candidatesPerHit  = 4 // index candidates read per wanted result (hash collisions)
	maxRecordReadSize = 64 << 20
)

func (b *Broker) registerQuery() {
	b.handle(remoting.ReqQueryMessage, b.queryMessage)
	b.handle(remoting.ReqViewMessageByID, b.viewMessage)
}

type queryHeader struct {
	topic, key string
	maxNum     int
	begin, end int64
}

func parseQueryHeader(ext map[string]string) (queryHeader, error) {
	q := queryHeader{topic: ext["topic"], key: ext["key"]}
	if q.topic == "" || q.key == "" {
		return q, fmt.Errorf("topic and key are required")
	}
	n, err := strconv.Atoi(ext["maxNum"])
	if err != nil {
		return q, fmt.Errorf("maxNum %q is not a number", ext["maxNum"])
	}
	if q.begin, err = strconv.ParseInt(ext["beginTimestamp"], 10, 64); err != nil {
		return q, fmt.Errorf("beginTimestamp %q is not a number", ext["beginTimestamp"])
	}
	if q.end, err = strconv.ParseInt(ext["endTimestamp"], 10, 64); err != nil {
		return q, fmt.Errorf("endTimestamp %q is not a number", ext["endTimestamp"])
	}
	if ext[uniqueQueryFlag] == "true" {
		n = uniqKeyQueryNum
	}
	q.maxNum = min(max(n, 1), maxQueryNum)
	return q, nil
}

func (b *Broker) queryMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	q, err := parseQueryHeader(req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "query message: %v", err)
	}
	offsets, err := b.index.Query(indexfile.Key(q.topic, q.key), q.begin, q.end, q.maxNum*candidatesPerHit)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "query index: %v", err)
	}
	var body []byte
	var found int
	var lastStore int64
	for _, co := range offsets {
		if found == q.maxNum {
			break
		}
		rec, err := b.readRecord(co)
		if err != nil {
			continue // retention may have removed it since it was indexed
		}
		m, _, err := message.DecodeExt(rec)
		if err != nil || !q.matches(m) {
			continue
		}
		body = append(body, rec...)
		found++
		lastStore = max(lastStore, m.StoreTimestamp)
	}
	if found == 0 {
		return errResponse(req, remoting.ResQueryNotFound, "can not find message, maybe time range not correct (topic %s, key %s)", q.topic, q.key)
	}
	resp := okResponse(req)
	resp.Body = body
	// The index does not expose its own high-water marks; the newest match
	// and the applied commit offset stand in for them.
	resp.ExtFields["indexLastUpdateTimestamp"] = strconv.FormatInt(lastStore, 10)
	resp.ExtFields["indexLastUpdatePhyoffset"] = strconv.FormatInt(b.node.Metadata().MaxCommitOffset(), 10)
	return resp
}

func (q queryHeader) matches(m *message.MessageExt) bool {
	if m.Topic != q.topic || m.StoreTimestamp < q.begin || m.StoreTimestamp > q.end {
		return false
	}
	return m.UniqKey() == q.key || slices.Contains(m.Keys(), q.key)
}

func (b *Broker) viewMessage(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	co, err := strconv.ParseInt(req.ExtFields["offset"], 10, 64)
	if err != nil || co < 0 {
		return errResponse(req, remoting.ResSystemError, "view message: offset %q is not a commit offset", req.ExtFields["offset"])
	}
	rec, err := b.readRecord(co)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "can not find message by the offset, %d: %v", co, err)
	}
	resp := okResponse(req)
	resp.Body = rec
	return resp
}

// readRecord reads the whole stored record that starts at commit offset
// co: its size first, then the record, which must say it is at co.
func (b *Broker) readRecord(co int64) ([]byte, error) {
	head, err := b.clog.ReadMessage(nil, co, 4)
	if err != nil {
		return nil, err
	}
	size, err := message.PeekTotalSize(head)
	if err != nil {
		return nil, err
	}
	if size < message.MinExtSize || size > maxRecordReadSize {
		return nil, fmt.Errorf("broker: no record at commit offset %d (size field %d)", co, size)
	}
	rec, err := b.clog.ReadMessage(nil, co, size)
	if err != nil {
		return nil, err
	}
	if len(rec) != size || binary.BigEndian.Uint32(rec[4:]) != message.MagicCode {
		return nil, fmt.Errorf("broker: no record starts at commit offset %d (bad magic)", co)
	}
	if at, err := message.RecordCommitLogOffset(rec); err != nil || at != co {
		return nil, fmt.Errorf("broker: no record starts at commit offset %d", co)
	}
	return rec, nil
}
