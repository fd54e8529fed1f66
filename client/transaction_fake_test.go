package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// The transaction fake: a name server routing topic "T" (one queue) to
// broker group "b" of fake nodes, node 0 the leader (id 0). Each node
// answers HEART_BEAT (remembering the client's connection, for
// check-backs), SEND_MESSAGE_V2 and END_TRANSACTION, the last two scripted
// by codes, then SUCCESS, and records what it received.

// Values the fake's send answers carry.
const (
	fakeHalfQueueOffset  = 42
	fakeHalfCommitOffset = 0x1234_5678
	fakeTransactionID    = "broker-tx-7"
)

var fakeStoreHost = netip.MustParseAddrPort("127.0.0.1:10911")

type txFake struct {
	ns    *fakeServer
	nodes []*txNode
}

// txNode is one fake node of group "b".
type txNode struct {
	*fakeServer
	id int64

	mu        sync.Mutex
	sendCodes []int16 // answers to the next sends, then SUCCESS
	endCodes  []int16 // answers to the next END_TRANSACTIONs, then SUCCESS
	sends     []protocol.SendMessageHeader
	ends      []endCall
	conn      *remoting.Conn // the client's, from its last heartbeat
	hb        protocol.HeartbeatData
}

// endCall is one END_TRANSACTION a node received.
type endCall struct {
	h      protocol.EndTransactionHeader
	oneway bool
	answer int16 // the code answered (requests only)
}

func startTxFake(t *testing.T, nodes int) *txFake {
	t.Helper()
	f := &txFake{ns: startFake(t)}
	addrs := map[int64]string{}
	for i := range nodes {
		n := &txNode{fakeServer: startFake(t), id: int64(i)}
		n.serve()
		f.nodes = append(f.nodes, n)
		addrs[int64(i)] = n.addr
	}
	route := protocol.TopicRouteData{
		QueueDatas:  []protocol.QueueData{{BrokerName: "b", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		BrokerDatas: []protocol.BrokerData{{Cluster: "c", BrokerName: "b", BrokerAddrs: addrs}},
	}
	body, _ := json.Marshal(route)
	f.ns.srv.HandleFunc(remoting.ReqGetRouteInfoByTopic, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		f.ns.routeCalls.Add(1)
		if req.ExtFields["topic"] != "T" {
			return remoting.NewResponse(req, remoting.ResTopicNotExist, "no such topic")
		}
		resp := remoting.NewResponse(req, remoting.ResSuccess, "")
		resp.Body = body
		return resp
	})
	return f
}

// next pops the first scripted code, SUCCESS when none is left.
func next(codes *[]int16) int16 {
	if len(*codes) == 0 {
		return remoting.ResSuccess
	}
	c := (*codes)[0]
	*codes = (*codes)[1:]
	return c
}

func (n *txNode) serve() {
	n.srv.HandleFunc(remoting.ReqHeartBeat, func(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
		var hb protocol.HeartbeatData
		if err := json.Unmarshal(req.Body, &hb); err != nil {
			return remoting.NewResponse(req, remoting.ResSystemError, err.Error())
		}
		n.mu.Lock()
		n.conn, n.hb = c, hb
		n.mu.Unlock()
		return remoting.NewResponse(req, remoting.ResSuccess, "")
	})
	n.srv.HandleFunc(remoting.ReqSendMessageV2, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		h, err := protocol.DecodeSendMessageHeader(req.Code, req.ExtFields)
		if err != nil {
			return remoting.NewResponse(req, remoting.ResSystemError, err.Error())
		}
		n.mu.Lock()
		n.sends = append(n.sends, h)
		code := next(&n.sendCodes)
		n.mu.Unlock()
		resp := remoting.NewResponse(req, code, "scripted")
		resp.ExtFields = map[string]string{"msgId": message.EncodeOffsetMsgID(fakeStoreHost, fakeHalfCommitOffset),
			"queueId": "0", "queueOffset": fmt.Sprint(fakeHalfQueueOffset), "transactionId": fakeTransactionID}
		return resp
	})
	n.srv.HandleFunc(remoting.ReqEndTransaction, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		h, err := protocol.DecodeEndTransactionHeader(req.ExtFields)
		if err != nil {
			return remoting.NewResponse(req, remoting.ResSystemError, err.Error())
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		call := endCall{h: h, oneway: req.IsOneway()}
		if !call.oneway {
			call.answer = next(&n.endCodes)
		}
		n.ends = append(n.ends, call)
		return remoting.NewResponse(req, call.answer, "scripted")
	})
}

// script sets the answers to the next sends and END_TRANSACTIONs.
func (n *txNode) script(sends, ends []int16) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sendCodes, n.endCodes = sends, ends
}

func (n *txNode) sent() []protocol.SendMessageHeader {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]protocol.SendMessageHeader(nil), n.sends...)
}

func (n *txNode) ended() []endCall {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]endCall(nil), n.ends...)
}

// waitEnds waits until the node has received want END_TRANSACTIONs.
func (n *txNode) waitEnds(t *testing.T, want int) []endCall {
	t.Helper()
	var got []endCall
	eventually(t, 5*time.Second, func() error {
		if got = n.ended(); len(got) < want {
			return fmt.Errorf("node %d: %d END_TRANSACTIONs, want %d", n.id, len(got), want)
		}
		return nil
	})
	return got
}

// waitClient waits for the client's heartbeat and returns it.
func (n *txNode) waitClient(t *testing.T) protocol.HeartbeatData {
	t.Helper()
	var hb protocol.HeartbeatData
	eventually(t, 5*time.Second, func() error {
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.conn == nil {
			return fmt.Errorf("node %d: no heartbeat yet", n.id)
		}
		hb = n.hb
		return nil
	})
	return hb
}

// check sends CHECK_TRANSACTION_STATE (oneway, as brokers do) to the
// client over the connection of its last heartbeat, with msg as the body.
func (n *txNode) check(t *testing.T, h protocol.CheckTransactionStateHeader, msg *message.MessageExt) {
	t.Helper()
	n.waitClient(t)
	body, err := message.AppendExt(nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	c := n.conn
	n.mu.Unlock()
	if err := c.SendOneway(testCtx(t, 5*time.Second), remoting.NewRequest(remoting.ReqCheckTransactionState, h.Ext(), body)); err != nil {
		t.Fatalf("node %d: send check: %v", n.id, err)
	}
}

// halfMessage is a stored half message of group, as a broker sends it in
// a check-back.
func halfMessage(group, uniq string) *message.MessageExt {
	m := &message.MessageExt{Message: message.Message{Topic: "T", Body: []byte("half")},
		StoreHost: fakeStoreHost, BornHost: netip.MustParseAddrPort("127.0.0.1:50000"),
		CommitLogOffset: 777, QueueOffset: 9, SysFlag: message.SysFlagTransactionPrepared}
	m.SetProperty(message.PropertyTransactionPrepared, "true")
	m.SetProperty(message.PropertyProducerGroup, group)
	if uniq != "" {
		m.SetUniqKey(uniq)
	}
	return m
}
