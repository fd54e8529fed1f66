package client

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

func TestCorrelationIDs(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := newCorrelationID()
		if !uuid.MatchString(id) || seen[id] {
			t.Fatalf("correlation id %q (repeat %v)", id, seen[id])
		}
		seen[id] = true
	}
}

func TestNewReplyMessage(t *testing.T) {
	req := &message.MessageExt{Message: message.Message{Topic: "orders", Body: []byte("q")}}
	if _, err := NewReplyMessage(req, []byte("a")); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("reply to a plain message: %v", err)
	}
	req.SetProperty(message.PropertyCluster, "c1")
	req.SetProperty(message.PropertyReplyToClient, "10.0.0.1@x")
	req.SetProperty(message.PropertyCorrelationID, "cid")
	req.SetProperty(message.PropertyTTL, "3")
	r, err := NewReplyMessage(req, []byte("answer"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Topic != protocol.ReplyTopic("c1") || string(r.Body) != "answer" || !isReply(r) ||
		r.Property(message.PropertyCorrelationID) != "cid" || r.Property(message.PropertyReplyToClient) != "10.0.0.1@x" || r.Property(message.PropertyTTL) != "3" {
		t.Fatalf("reply %+v", r)
	}
	if _, err := NewReplyMessage(nil, nil); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("reply to nil: %v", err)
	}
}

// TestRequestValidationAndReplies: requests are validated before any I/O,
// a reply pushed by a broker reaches the waiting request (inflated,
// arrival time set), a reply nobody waits for is dropped, and a request
// whose reply does not come times out and leaves no waiter behind.
func TestRequestValidationAndReplies(t *testing.T) {
	p, err := NewProducer("pg-req", WithNameServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	p.started = true
	ctx := testCtx(t, 5*time.Second)
	if _, err := p.Request(ctx, newMsg("t", "x"), 0); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("request without timeout: %v", err)
	}
	reply := newMsg("t", "x")
	reply.SetProperty(message.PropertyMsgType, protocol.ReplyMessageFlag)
	if _, err := p.Request(ctx, reply, time.Second); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("request of a reply message: %v", err)
	}
	half := newMsg("t", "x")
	half.SetProperty(message.PropertyTransactionPrepared, "true")
	if _, err := p.Send(ctx, half); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("plain send of a half message: %v", err)
	}
	if pm, err := p.preparePlain(reply); err != nil || pm.code != remoting.ReqSendReplyMessageV2 {
		t.Fatalf("reply prepared as code %d, %v", pm.code, err)
	}

	req := newMsg("t", "question")
	id, ch, err := p.prepareRequest(req, 2*time.Second)
	if err != nil || req.Property(message.PropertyReplyToClient) != p.ClientID() || req.Property(message.PropertyTTL) != "2" || req.Property(message.PropertyCorrelationID) != id {
		t.Fatalf("prepared request %+v (%v)", req.Properties, err)
	}
	z, _ := message.Compress([]byte("the answer"), 6)
	push := func(cid string) *remoting.Command {
		props := map[string]string{message.PropertyCorrelationID: cid, message.PropertyMsgType: protocol.ReplyMessageFlag}
		h := protocol.ReplyMessageHeader{Topic: protocol.ReplyTopic("c"), Properties: string(message.EncodeProperties(props)),
			SysFlag: message.SysFlagCompressed, StoreTimestamp: 42}
		return remoting.NewRequest(remoting.ReqPushReplyMessageToClient, h.Ext(), z)
	}
	if resp := p.onReply(context.Background(), nil, push(id)); resp.Code != remoting.ResSuccess {
		t.Fatalf("push answered %d %q", resp.Code, resp.Remark)
	}
	got, err := waitReply(ctx, id, ch)
	if err != nil || string(got.Body) != "the answer" || got.StoreTimestamp != 42 || got.Property(message.PropertyArriveTime) == "" {
		t.Fatalf("reply %+v, %v", got, err)
	}
	if _, err := strconv.ParseInt(got.Property(message.PropertyArriveTime), 10, 64); err != nil {
		t.Fatalf("arrive time %q", got.Property(message.PropertyArriveTime))
	}
	if p.replies.deliver("nobody", got) {
		t.Fatal("a reply without a waiter was delivered")
	}
	bad := remoting.NewRequest(remoting.ReqPushReplyMessageToClient, map[string]string{"properties": "x"}, nil)
	if resp := p.onReply(context.Background(), nil, bad); resp.Code == remoting.ResSuccess {
		t.Fatal("a push without topic was accepted")
	}

	id2, ch2, _ := p.prepareRequest(newMsg("t", "q2"), time.Second)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := waitReply(short, id2, ch2); !errors.Is(err, ErrRequestTimeout) {
		t.Fatalf("unanswered request: %v", err)
	}
	p.replies.remove(id2)
	p.replies.mu.Lock()
	_, left := p.replies.m[id2]
	p.replies.mu.Unlock()
	if left {
		t.Fatal("the timed-out request's waiter is left")
	}
}

// TestReplyReachesAnotherProducerOfTheProcess: the broker pushes a reply
// to a connection of the requester's client id, which producers of one
// process share by default; whichever producer receives it, the request
// that waits for it gets it.
func TestReplyReachesAnotherProducerOfTheProcess(t *testing.T) {
	asker, err := NewProducer("asker")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewProducer("replier")
	if err != nil {
		t.Fatal(err)
	}
	if asker.ClientID() != other.ClientID() {
		t.Fatalf("client ids %s and %s: the test needs them shared", asker.ClientID(), other.ClientID())
	}
	id, ch, err := asker.prepareRequest(newMsg("t", "q"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer asker.replies.remove(id)
	push := remoting.NewRequest(remoting.ReqPushReplyMessageToClient, protocol.ReplyMessageHeader{Topic: "t",
		Properties: string(message.EncodeProperties(map[string]string{message.PropertyCorrelationID: id}))}.Ext(), []byte("a"))
	if resp := other.onReply(context.Background(), nil, push); resp.Code != remoting.ResSuccess {
		t.Fatalf("push answered %d %q", resp.Code, resp.Remark)
	}
	got, err := waitReply(testCtx(t, 5*time.Second), id, ch)
	if err != nil || string(got.Body) != "a" {
		t.Fatalf("reply %+v, %v", got, err)
	}
}
