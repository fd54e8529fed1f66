package broker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// fakeRequester is a requester's connection: it heartbeats as a producer
// and records the replies pushed to it.
type fakeRequester struct {
	cl     *remoting.Client
	pushes chan *remoting.Command
}

func newFakeRequester(t *testing.T, g *brokertest.Group, clientID string) *fakeRequester {
	cl, err := remoting.NewClient(remoting.DefaultClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	r := &fakeRequester{cl: cl, pushes: make(chan *remoting.Command, 8)}
	cl.HandleFunc(remoting.ReqPushReplyMessageToClient, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		r.pushes <- req
		return remoting.NewResponse(req, remoting.ResSuccess, "")
	})
	body, _ := json.Marshal(protocol.HeartbeatData{ClientID: clientID, ProducerDataSet: []protocol.ProducerData{{GroupName: "requesters"}}})
	for i := 0; i < g.Len(); i++ {
		mustSucceed(t, invokeOn(t, g, cl, i, remoting.NewRequest(remoting.ReqHeartBeat, nil, body)), "requester heartbeat")
	}
	return r
}

func replyReq(code int16, props map[string]string, body string) *remoting.Command {
	ext := sendHeaderExt(protocol.ReplyTopic("test-cluster"), 0, props)
	if code == remoting.ReqSendReplyMessageV2 {
		return v2Req(code, ext, []byte(body))
	}
	return remoting.NewRequest(code, ext, []byte(body))
}

// TestReplyPushedAndStored: SEND_REPLY_MESSAGE and _V2, sent to the
// leader or a follower, are pushed to the requester's connection with
// their properties and body, and stored in the reply topic; replies that
// name no requester, or one not connected, are answered SYSTEM_ERROR with
// a remark.
func TestReplyPushedAndStored(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{})
	g.Eventually(5*time.Second, func() error {
		if _, ok := g.Broker(leader).Metadata().Topic(protocol.ReplyTopic("test-cluster")); !ok {
			return errString("reply topic not created yet")
		}
		return nil
	})
	req := newFakeRequester(t, g, "10.1.1.1@req")
	props := func(cid string) map[string]string {
		return map[string]string{message.PropertyMsgType: protocol.ReplyMessageFlag, message.PropertyCorrelationID: cid,
			message.PropertyReplyToClient: "10.1.1.1@req", "k": "v"}
	}
	for i, c := range []struct {
		code int16
		node int
	}{{remoting.ReqSendReplyMessage, leader}, {remoting.ReqSendReplyMessageV2, follower(g, leader)}} {
		cid := "cid-" + string(rune('a'+i))
		resp := g.Invoke(c.node, replyReq(c.code, props(cid), "answer "+cid))
		mustSucceed(t, resp, "reply")
		select {
		case push := <-req.pushes:
			h, err := protocol.DecodeReplyMessageHeader(push.ExtFields)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := message.DecodeProperties([]byte(h.Properties))
			if string(push.Body) != "answer "+cid || p[message.PropertyCorrelationID] != cid || p["k"] != "v" || h.Topic != protocol.ReplyTopic("test-cluster") || h.StoreTimestamp == 0 {
				t.Fatalf("push %+v props %v body %q", h, p, push.Body)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("reply %s not pushed", cid)
		}
		m, err := viewByID(g, leader, resp.ExtFields["msgId"])
		if err != nil || string(m.Body) != "answer "+cid {
			t.Fatalf("stored reply %+v, %v", m, err)
		}
	}
	for name, c := range map[string]struct {
		props  map[string]string
		remark string
	}{
		"no requester":  {map[string]string{message.PropertyCorrelationID: "x"}, message.PropertyReplyToClient},
		"not connected": {map[string]string{message.PropertyCorrelationID: "x", message.PropertyReplyToClient: "10.9.9.9@gone"}, "not found"},
	} {
		resp := g.Invoke(leader, replyReq(remoting.ReqSendReplyMessageV2, c.props, "x"))
		if resp.Code != remoting.ResSystemError || !strings.Contains(resp.Remark, c.remark) {
			t.Errorf("%s: %d %q", name, resp.Code, resp.Remark)
		}
	}
	if resp := g.Invoke(leader, remoting.NewRequest(remoting.ReqSendReplyMessageV2, map[string]string{"x": "y"}, nil)); resp.Code != remoting.ResSystemError {
		t.Errorf("bad header: %d %q", resp.Code, resp.Remark)
	}
}

// TestReplyNotStoredWhenOff: with StoreReplyMessage off a reply is pushed
// and nothing is stored.
func TestReplyNotStoredWhenOff(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{Configure: func(_ int, c *broker.Config) { c.StoreReplyMessage = false }})
	g.Eventually(5*time.Second, func() error {
		if _, ok := g.Broker(leader).Metadata().Topic(protocol.ReplyTopic("test-cluster")); !ok {
			return errString("reply topic not created yet")
		}
		return nil
	})
	req := newFakeRequester(t, g, "10.1.1.2@req")
	p := map[string]string{message.PropertyMsgType: protocol.ReplyMessageFlag, message.PropertyCorrelationID: "c", message.PropertyReplyToClient: "10.1.1.2@req"}
	mustSucceed(t, g.Invoke(leader, replyReq(remoting.ReqSendReplyMessageV2, p, "x")), "reply")
	select {
	case <-req.pushes:
	case <-time.After(5 * time.Second):
		t.Fatal("reply not pushed")
	}
	if n := maxOffsetOf(t, g, leader, protocol.ReplyTopic("test-cluster"), 0); n != 0 {
		t.Fatalf("%d replies stored with StoreReplyMessage off", n)
	}
}
