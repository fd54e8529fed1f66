package broker

// Request-reply (RocketMQ 4.6+'s ReplyMessageProcessor):
// SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325) carry a reply
// message (MSG_TYPE "reply", topic <cluster>_REPLY_TOPIC, REPLY_TO_CLIENT
// the requester's client id). The leader (a follower forwards) checks it
// as a send, pushes it to the requester's connection as
// PUSH_REPLY_MESSAGE_TO_CLIENT (326) with a ReplyMessageHeader and the
// reply's body, and, with Config.StoreReplyMessage (RocketMQ's
// storeReplyMessageEnable, default true), also stores it in the reply
// topic. The answer is SUCCESS once the push succeeded; SYSTEM_ERROR with
// a remark when REPLY_TO_CLIENT is missing, the requester is not
// connected to this node, or it refused the push. The requester must be
// connected to the group's leader (clients heartbeat brokerId 0).

import (
	"context"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wallclock"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// replyPushTimeout bounds one PUSH_REPLY_MESSAGE_TO_CLIENT.
const replyPushTimeout = 3 * time.Second

// replyService serves the reply codes.
type replyService struct {
	send      *sendService
	producers *producerManager
	store     bool
	log       hclog.Logger
}

func (r *replyService) register(m mux) {
	m.HandleFunc(remoting.ReqSendReplyMessage, r.send.rep.leaderOnly(r.sendReply))
	m.HandleFunc(remoting.ReqSendReplyMessageV2, r.send.rep.leaderOnly(r.sendReply))
}

func (r *replyService) sendReply(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	req = withBornHost(c, req)
	h, err := protocol.DecodeSendMessageHeader(req.Code, req.ExtFields)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "bad reply header: %v", err)
	}
	sr := &sendRequest{req: req, h: h}
	tc, resp := r.send.checkSend(ctx, sr)
	if resp != nil {
		return resp
	}
	sr.props, sr.propsErr = message.DecodeProperties([]byte(h.Properties))
	if sr.propsErr != nil {
		return errResponse(req, remoting.ResMessageIllegal, "%s: %v", illegalRemark, sr.propsErr)
	}
	sr.queueID = h.QueueID
	if sr.queueID < 0 {
		sr.queueID = int32(time.Now().UnixNano() % int64(max(tc.WriteQueueNums, 1)))
	}
	if remark := r.push(sr); remark != "" {
		return errResponse(req, remoting.ResSystemError, "%s", remark)
	}
	resp = okResponse(req)
	resp.ExtFields["msgId"], resp.ExtFields["queueId"], resp.ExtFields["queueOffset"] = "0", strconv.Itoa(int(sr.queueID)), "0"
	resp.ExtFields[message.PropertyMsgRegion], resp.ExtFields[message.PropertyTraceOn] = regionID, traceOn
	if r.store {
		r.storeReply(ctx, sr, resp)
	}
	return resp
}

// push sends the reply to the requester's connection; the remark says why
// it could not.
func (r *replyService) push(sr *sendRequest) string {
	client := sr.props[message.PropertyReplyToClient]
	if client == "" {
		return "reply message properties[" + message.PropertyReplyToClient + "] is null"
	}
	conn := r.producers.connOf(client)
	if conn == nil {
		return "push reply message fail, channel of <" + client + "> not found on this broker"
	}
	sr.props[protocol.PropertyPushReplyTime] = strconv.FormatInt(wallclock.UnixMilli(), 10)
	h := sr.h
	rh := protocol.ReplyMessageHeader{
		ProducerGroup: h.ProducerGroup, Topic: h.Topic, DefaultTopic: h.DefaultTopic,
		DefaultTopicQueueNums: h.DefaultTopicQueueNums, QueueID: sr.queueID, SysFlag: h.SysFlag,
		BornTimestamp: h.BornTimestamp, Flag: h.Flag, Properties: string(message.EncodeProperties(sr.props)),
		ReconsumeTimes: h.ReconsumeTimes, UnitMode: h.UnitMode, BornHost: bornHost(sr.req).String(),
		StoreHost: r.send.records.storeHost.String(), StoreTimestamp: wallclock.UnixMilli(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), replyPushTimeout)
	defer cancel()
	resp, err := conn.Invoke(ctx, remoting.NewRequest(remoting.ReqPushReplyMessageToClient, rh.Ext(), sr.req.Body))
	if err != nil {
		r.log.Warn("push reply message failed", "client", client, "error", err)
		return "push reply message to " + client + " fail: " + err.Error()
	}
	if resp.Code != remoting.ResSuccess {
		return "push reply message to " + client + " fail: " + resp.Remark
	}
	return ""
}

// storeReply stores the reply in the reply topic as a send would; the
// answer then carries its msgId and offset. A failure to store is logged:
// the reply was delivered.
func (r *replyService) storeReply(ctx context.Context, sr *sendRequest, resp *remoting.Command) {
	msgs, fail := r.send.records.single(sr)
	if fail != nil {
		r.log.Warn("storing reply message failed", "remark", fail.Remark)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	res, err := r.send.rep.propose(pctx, &dledger.PutMessagesCommand{Messages: msgs})
	if err != nil {
		r.log.Warn("storing reply message failed", "error", err)
		return
	}
	resp.ExtFields["msgId"] = message.EncodeOffsetMsgID(r.send.records.storeHost, res.Messages[0].CommitOffset)
	resp.ExtFields["queueOffset"] = strconv.FormatInt(res.Messages[0].QueueOffset, 10)
}
