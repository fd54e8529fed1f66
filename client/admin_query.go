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
// topic's route.
func (a *Admin) QueryMessageByKey(ctx context.Context, topic, key string, begin, end time.Time, max int) ([]*message.MessageExt, error) {
	if end.IsZero() {
		end = time.Now()
	}
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	ext := queryHeader(topic, key, begin, end, max)
	var out []*message.MessageExt
	for _, bd := range rd.BrokerDatas {
		msgs, err := a.queryGroup(ctx, bd, ext)
		if err != nil {
			return out, err
		}
		for _, m := range msgs {
			if slices.Contains(m.Keys(), key) {
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
