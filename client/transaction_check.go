package client

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// Check-backs: a broker holding a half message in doubt sends
// CHECK_TRANSACTION_STATE (oneway) to one producer of the message's group,
// over that producer's own connection to it, with the stored half message
// as body. The producer runs its checker and answers with END_TRANSACTION
// (fromTransactionCheck true) on the same connection. The request handler
// only decodes and queues the check: the checker may be slow, and a
// handler holds one of its connection's handler slots, which, all taken,
// stop the connection's reads (responses to sends included).

// checkRequest is one check-back waiting for a worker.
type checkRequest struct {
	conn   *remoting.Conn
	header protocol.CheckTransactionStateHeader
	// bname is the broker name a RocketMQ 5 broker adds to the check;
	// echoed in the answer.
	bname string
	msg   *message.MessageExt
}

// onCheck is the CHECK_TRANSACTION_STATE handler: it queues a check of
// this producer's group, and logs and drops anything else, or a check
// that finds the queue full.
func (tp *TransactionProducer) onCheck(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := protocol.DecodeCheckTransactionStateHeader(req.ExtFields)
	if err != nil {
		tp.log.Warn("bad check-back header: ignored", "remote", conn.RemoteAddr(), "error", err)
		return nil
	}
	msg, _, err := decodeOpts.DecodeExt(req.Body)
	if err != nil {
		tp.log.Warn("bad check-back message: ignored", "remote", conn.RemoteAddr(), "msgId", h.MsgID, "error", err)
		return nil
	}
	if g := msg.Property(message.PropertyProducerGroup); g != tp.group {
		tp.log.Warn("check-back for another producer group: ignored", "remote", conn.RemoteAddr(), "group", g, "msgId", h.MsgID)
		return nil
	}
	select {
	case tp.checks <- checkRequest{conn: conn, header: h, bname: req.ExtFields["bname"], msg: msg}:
	default:
		tp.log.Warn("check-back queue full: check dropped, the broker will ask again",
			"remote", conn.RemoteAddr(), "msgId", h.MsgID, "queued", CheckQueueSize)
	}
	return nil
}

// checkLoop is one check worker, until Close.
func (tp *TransactionProducer) checkLoop() {
	defer tp.checkers.Done()
	for {
		select {
		case <-tp.checkCtx.Done():
			return
		case cr := <-tp.checks:
			tp.answer(cr)
		}
	}
}

// answer runs the checker on one check-back and sends its decision to the
// node that asked.
func (tp *TransactionProducer) answer(cr checkRequest) {
	msg := cr.msg
	msgID := msg.UniqKey()
	if msgID == "" {
		msgID = msg.MsgID()
	}
	txID := msg.Property(message.PropertyTransactionID)
	if txID == "" {
		txID = cr.header.TransactionID
	}
	msg.TransactionID = txID
	if msg.TransactionID == "" {
		msg.TransactionID = msgID
	}
	state := tp.runChecker(msg, msgID)
	h := protocol.EndTransactionHeader{
		ProducerGroup: tp.group, TranStateTableOffset: cr.header.TranStateTableOffset,
		CommitLogOffset: cr.header.CommitLogOffset, CommitOrRollback: state.wire(), FromTransactionCheck: true,
		MsgID: msgID, TransactionID: txID, BrokerName: cr.bname,
	}
	if err := tp.sendAnswer(cr.conn, h, state == UnknownTransaction); err != nil {
		tp.log.Warn("check-back answer not delivered: the broker will ask again",
			"remote", cr.conn.RemoteAddr(), "msgId", msgID, "state", state, "error", err)
		return
	}
	tp.log.Debug("check-back answered", "remote", cr.conn.RemoteAddr(), "msgId", msgID, "state", state)
}

// runChecker runs the checker, a panic or a state out of range counting
// as UnknownTransaction.
func (tp *TransactionProducer) runChecker(msg *message.MessageExt, msgID string) (state TransactionState) {
	defer func() {
		if r := recover(); r != nil {
			tp.log.Error("transaction checker panicked: state unknown, the broker will ask again",
				"msgId", msgID, "panic", r, "stack", string(debug.Stack()))
			state = UnknownTransaction
		}
	}()
	return tp.valid(tp.check(tp.checkCtx, msg), "checker", msgID)
}

// sendAnswer sends END_TRANSACTION h on conn, within the request timeout:
// oneway for an unknown state, which RocketMQ brokers do not answer, else
// as a request, so that a refusal is seen.
func (tp *TransactionProducer) sendAnswer(conn *remoting.Conn, h protocol.EndTransactionHeader, oneway bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), tp.p.cfg.requestTimeout)
	defer cancel()
	req := remoting.NewRequest(remoting.ReqEndTransaction, h.Ext(), nil)
	req.SerializeType = remoting.SerializeRocketMQ
	if oneway {
		return conn.SendOneway(ctx, req)
	}
	resp, err := conn.Invoke(ctx, req)
	if err != nil {
		return fmt.Errorf("client: END_TRANSACTION at %s: %w", conn.RemoteAddr(), err)
	}
	return responseError(conn.RemoteAddr().String(), req, resp)
}
