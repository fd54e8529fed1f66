package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// decodeOpts decodes looked-up messages with their bodies inflated.
var decodeOpts = message.DecodeExtOpts{Decompress: true}

// QueryMessageByKey returns the messages of topic whose KEYS hold key and
// that were stored in [begin, end] (a zero end means now), at most max
// (default 32) per broker group, newest first. It asks every group of the
// topic's route. An end before begin is an ErrInvalidOption.
func (a *Admin) QueryMessageByKey(ctx context.Context, topic, key string, begin, end time.Time, max int) ([]*message.MessageExt, error) {
	if key == "" {
		return nil, fmt.Errorf("%w: no key", ErrInvalidOption)
	}
	end, err := queryRange(begin, end)
	if err != nil {
		return nil, err
	}
	return a.queryEveryGroup(ctx, topic, queryHeader(topic, key, begin, end, max), func(m *message.MessageExt) bool {
		return slices.Contains(m.Keys(), key)
	})
}

// QueryMessageByUniqueKey returns the messages of topic whose unique key
// (UNIQ_KEY, the msgId a send result reports) is msgID and that were
// stored in [begin, end] (a zero end means now), newest first: one, or
// more when the same message was stored again. It asks every group of the
// topic's route with QUERY_MESSAGE's _UNIQUE_KEY_QUERY flag (mqadmin
// queryMsgByUniqueKey). None found is an empty slice, not an error.
func (a *Admin) QueryMessageByUniqueKey(ctx context.Context, topic, msgID string, begin, end time.Time) ([]*message.MessageExt, error) {
	if msgID == "" {
		return nil, fmt.Errorf("%w: no unique key", ErrInvalidOption)
	}
	end, err := queryRange(begin, end)
	if err != nil {
		return nil, err
	}
	return a.queryEveryGroup(ctx, topic, uniqueQueryHeader(topic, msgID, begin, end), func(m *message.MessageExt) bool {
		return m.UniqKey() == msgID
	})
}

// uniqueQueryHeader is QUERY_MESSAGE's header of a unique-key lookup:
// _UNIQUE_KEY_QUERY set, 32 at most (the broker's cap for it).
func uniqueQueryHeader(topic, msgID string, begin, end time.Time) map[string]string {
	return protocol.QueryMessageHeader{Topic: topic, Key: msgID, MaxNum: 32, BeginTimestamp: begin.UnixMilli(),
		EndTimestamp: end.UnixMilli(), UniqueKey: true}.Ext()
}

// adminPullHeader is the PULL_MESSAGE header of an admin read: n messages
// of q from offset as AdminPullGroup, every tag, no long polling, no
// commit.
func adminPullHeader(q MessageQueue, offset int64, n int) map[string]string {
	return protocol.PullMessageHeader{ConsumerGroup: AdminPullGroup, Topic: q.Topic, QueueID: q.QueueID, QueueOffset: offset,
		MaxMsgNums: int32(n), SysFlag: protocol.PullFlagSubscription, Subscription: protocol.SubAll,
		ExpressionType: protocol.ExprTag, BrokerName: q.BrokerName}.Ext()
}

// queryRange checks a lookup's time range and turns a zero end into now.
func queryRange(begin, end time.Time) (time.Time, error) {
	if end.IsZero() {
		end = time.Now()
	}
	if end.Before(begin) {
		return end, fmt.Errorf("%w: begin %s is after end %s", ErrInvalidOption, begin.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	return end, nil
}

// queryEveryGroup sends QUERY_MESSAGE ext to every group of topic's route
// and returns the answers keep accepts, newest first.
func (a *Admin) queryEveryGroup(ctx context.Context, topic string, ext map[string]string, keep func(*message.MessageExt) bool) ([]*message.MessageExt, error) {
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := []*message.MessageExt{}
	for _, bd := range rd.BrokerDatas {
		msgs, err := a.queryGroup(ctx, bd, ext)
		if err != nil {
			return out, err
		}
		for _, m := range msgs {
			if m.Topic == topic && keep(m) {
				out = append(out, m)
			}
		}
	}
	slices.SortFunc(out, func(x, y *message.MessageExt) int { return cmp.Compare(y.StoreTimestamp, x.StoreTimestamp) })
	return out, nil
}

// queryHeader is QUERY_MESSAGE's header: at most max (default 32) messages
// with key stored in [begin, end].
func queryHeader(topic, key string, begin, end time.Time, max int) map[string]string {
	return protocol.QueryMessageHeader{Topic: topic, Key: key, MaxNum: int32(cmpOr(max, 32)),
		BeginTimestamp: begin.UnixMilli(), EndTimestamp: end.UnixMilli()}.Ext()
}

func (a *Admin) queryGroup(ctx context.Context, bd protocol.BrokerData, ext map[string]string) ([]*message.MessageExt, error) {
	resp, _, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
		return remoting.NewRequest(remoting.ReqQueryMessage, ext, nil)
	})
	var e *Error
	if errors.As(err, &e) && e.Code == remoting.ResQueryNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	msgs, err := decodeOpts.DecodeExts(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: QUERY_MESSAGE answer of %s: %w", bd.BrokerName, err)
	}
	return msgs, nil
}

// ViewMessageByID returns the message an offsetMsgId (SendResult's
// OffsetMsgID) locates: asked of the store host it names and, if that node
// cannot be reached, of the other nodes of its group (commit offsets are
// the same on every replica) — or, when the name server no longer lists
// the store host, of every node, keeping only a record that names that
// store host and commit offset.
func (a *Admin) ViewMessageByID(ctx context.Context, offsetMsgID string) (*message.MessageExt, error) {
	host, off, err := message.DecodeOffsetMsgID(offsetMsgID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	addrs := []string{host.String()}
	if ci, err := a.ClusterInfo(ctx); err == nil {
		addrs = append(addrs, groupMates(ci, host)...)
	}
	var errs []error
	for _, addr := range addrs {
		req := remoting.NewRequest(remoting.ReqViewMessageByID, map[string]string{"offset": strconv.FormatInt(off, 10)}, nil)
		resp, err := a.c.call(ctx, addr, req)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		m, _, err := decodeOpts.DecodeExt(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("client: VIEW_MESSAGE_BY_ID answer of %s: %w", addr, err)
		}
		if m.StoreHost == host && m.CommitLogOffset == off {
			return m, nil
		}
		errs = append(errs, fmt.Errorf("client: %s holds another message at %d", addr, off))
	}
	return nil, fmt.Errorf("%w: %s: %w", ErrMessageNotFound, offsetMsgID, errors.Join(errs...))
}

// groupMates returns the other addresses of the group that holds host;
// if no group lists host, every address.
func groupMates(ci *protocol.ClusterInfo, host netip.AddrPort) []string {
	var all []string
	for _, bd := range ci.BrokerAddrTable {
		addrs := brokerAddrs(bd)
		if slices.Contains(addrs, host.String()) {
			return slices.DeleteFunc(addrs, func(a string) bool { return a == host.String() })
		}
		all = append(all, addrs...)
	}
	slices.Sort(all)
	return all
}

// AdminPullGroup is the consumer group the admin's queue reads
// (ViewMessageByQueueOffset, ScanQueue) pull as: RocketMQ's
// TOOLS_CONSUMER. They commit nothing.
const AdminPullGroup = "TOOLS_CONSUMER"

// scanBatch is how many messages one PULL_MESSAGE of a scan asks for.
const scanBatch = 32

// queueGroup returns the broker group of q from its topic's route.
func (a *Admin) queueGroup(ctx context.Context, q MessageQueue) (protocol.BrokerData, error) {
	rd, err := a.Route(ctx, q.Topic)
	if err != nil {
		return protocol.BrokerData{}, err
	}
	bd, ok := (&Route{Data: *rd}).Broker(q.BrokerName)
	if !ok {
		return bd, fmt.Errorf("%w: %s in the route of %s", ErrBrokerNotFound, q.BrokerName, q.Topic)
	}
	return bd, nil
}

// pullAt pulls at most n messages of q from offset, without long
// polling, from the group's leader (else its other nodes). It returns the
// messages, the broker's nextBeginOffset and the answer's code; the
// no-message answers (PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY,
// PULL_OFFSET_MOVED) come back with their code and a nil error.
func (a *Admin) pullAt(ctx context.Context, bd protocol.BrokerData, q MessageQueue, offset int64, n int) ([]*message.MessageExt, int64, int16, error) {
	resp, addr, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
		return remoting.NewRequest(remoting.ReqPullMessage, adminPullHeader(q, offset, n), nil)
	})
	var e *Error
	if errors.As(err, &e) && resp != nil {
		switch e.Code {
		case remoting.ResPullNotFound, remoting.ResPullRetryImmediately, remoting.ResPullOffsetMoved:
			next, perr := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
			if perr != nil {
				return nil, 0, e.Code, fmt.Errorf("client: PULL_MESSAGE answer of %s (%s): nextBeginOffset %q", bd.BrokerName, addr, resp.ExtFields["nextBeginOffset"])
			}
			return nil, next, e.Code, nil
		}
	}
	if err != nil {
		return nil, 0, 0, err
	}
	msgs, err := decodeOpts.DecodeExts(resp.Body)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("client: PULL_MESSAGE answer of %s (%s): %w", bd.BrokerName, addr, err)
	}
	next, err := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
	if err != nil {
		next = offset + int64(len(msgs))
	}
	return msgs, next, remoting.ResSuccess, nil
}

// ViewMessageByQueueOffset returns the message stored at offset of queue
// q (mqadmin queryMsgByOffset), pulled as AdminPullGroup from q's group.
// An offset outside the queue's stored range is an ErrMessageNotFound
// naming the queue and the broker's answer.
func (a *Admin) ViewMessageByQueueOffset(ctx context.Context, q MessageQueue, offset int64) (*message.MessageExt, error) {
	if offset < 0 {
		return nil, fmt.Errorf("%w: negative offset %d", ErrInvalidOption, offset)
	}
	bd, err := a.queueGroup(ctx, q)
	if err != nil {
		return nil, err
	}
	msgs, _, code, err := a.pullAt(ctx, bd, q, offset, 1)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if m.QueueOffset == offset {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: %s offset %d (%s answered %s)", ErrMessageNotFound, q, offset, bd.BrokerName, remoting.ResponseCodeName(code))
}

// SearchQueueOffset returns the first offset of q stored at or after t
// (SEARCH_OFFSET_BY_TIMESTAMP; the queue's max offset when every message
// is older).
func (a *Admin) SearchQueueOffset(ctx context.Context, q MessageQueue, t time.Time) (int64, error) {
	bd, err := a.queueGroup(ctx, q)
	if err != nil {
		return 0, err
	}
	return a.searchOffset(ctx, bd, q, t)
}

func (a *Admin) searchOffset(ctx context.Context, bd protocol.BrokerData, q MessageQueue, t time.Time) (int64, error) {
	resp, _, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
		ext := queueExt(q)
		ext["timestamp"] = strconv.FormatInt(t.UnixMilli(), 10)
		return remoting.NewRequest(remoting.ReqSearchOffsetByTimestamp, ext, nil)
	})
	if err != nil {
		return 0, err
	}
	return extOffset(resp)
}

// ScanQueue calls fn with the messages of q at offsets [begin, end) in
// order (mqadmin printMsgByQueue), pulling them in batches of 32 so a
// long range is never held in memory. begin below the queue's min offset
// starts at the min offset; a negative end, or one past the queue's max
// offset, stops at the max offset read when the scan starts. An error
// from fn stops the scan and is returned as is.
func (a *Admin) ScanQueue(ctx context.Context, q MessageQueue, begin, end int64, fn func(*message.MessageExt) error) error {
	bd, err := a.queueGroup(ctx, q)
	if err != nil {
		return err
	}
	return a.scan(ctx, bd, q, begin, end, fn)
}

// ScanQueueByTime calls fn, in offset order, with the messages of q stored
// in [begin, end] (a zero end means now): the offsets between
// SEARCH_OFFSET_BY_TIMESTAMP of begin and of end, each message's store
// time checked again (mqadmin printMsg's begin and end timestamps). An
// error from fn stops the scan and is returned as is.
func (a *Admin) ScanQueueByTime(ctx context.Context, q MessageQueue, begin, end time.Time, fn func(*message.MessageExt) error) error {
	end, err := queryRange(begin, end)
	if err != nil {
		return err
	}
	bd, err := a.queueGroup(ctx, q)
	if err != nil {
		return err
	}
	from, err := a.searchOffset(ctx, bd, q, begin)
	if err != nil {
		return err
	}
	to, err := a.searchOffset(ctx, bd, q, end.Add(time.Millisecond))
	if err != nil {
		return err
	}
	lo, hi := begin.UnixMilli(), end.UnixMilli()
	return a.scan(ctx, bd, q, from, to, func(m *message.MessageExt) error {
		if m.StoreTimestamp < lo || m.StoreTimestamp > hi {
			return nil
		}
		return fn(m)
	})
}

// scan pulls q's offsets [begin, end), clamped to its stored range, and
// hands each message to fn.
func (a *Admin) scan(ctx context.Context, bd protocol.BrokerData, q MessageQueue, begin, end int64, fn func(*message.MessageExt) error) error {
	minOff, err := a.queueOffset(ctx, bd, remoting.ReqGetMinOffset, q)
	if err != nil {
		return err
	}
	maxOff, err := a.queueOffset(ctx, bd, remoting.ReqGetMaxOffset, q)
	if err != nil {
		return err
	}
	if end < 0 || end > maxOff {
		end = maxOff
	}
	for off := max(begin, minOff); off < end; {
		msgs, next, code, err := a.pullAt(ctx, bd, q, off, int(min(scanBatch, end-off)))
		if err != nil {
			return err
		}
		if code == remoting.ResPullNotFound {
			return nil // the queue ends before end (trimmed meanwhile)
		}
		for _, m := range msgs {
			if m.QueueOffset < off || m.QueueOffset >= end {
				continue
			}
			if err := fn(m); err != nil {
				return err
			}
			next = max(next, m.QueueOffset+1)
		}
		if next <= off {
			return fmt.Errorf("client: pulling %s at %d: %s answered %s without moving on", q, off, bd.BrokerName, remoting.ResponseCodeName(code))
		}
		off = next
	}
	return nil
}
