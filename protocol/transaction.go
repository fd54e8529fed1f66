package protocol

import "strconv"

// Transaction headers: END_TRANSACTION (37, producer → broker) and
// CHECK_TRANSACTION_STATE (39, broker → producer), as RocketMQ's
// EndTransactionRequestHeader and CheckTransactionStateRequestHeader.

// Transaction decisions in END_TRANSACTION's commitOrRollback, as
// RocketMQ's MessageSysFlag transaction types. Frozen.
const (
	TransactionNotType      int32 = 0  // unknown: leave it to the check-back
	TransactionCommitType   int32 = 8  // commit: the message appears on its topic
	TransactionRollbackType int32 = 12 // roll back: it never does
)

// EndTransactionHeader is RocketMQ's EndTransactionRequestHeader.
type EndTransactionHeader struct {
	ProducerGroup string
	// TranStateTableOffset is the half message's queue offset in the half
	// topic (the send result's queue offset).
	TranStateTableOffset int64
	// CommitLogOffset is the half message's commit offset (the send
	// result's offsetMsgId holds it).
	CommitLogOffset      int64
	CommitOrRollback     int32
	FromTransactionCheck bool
	MsgID                string
	TransactionID        string
	BrokerName           string
}

// DecodeEndTransactionHeader reads the header: producerGroup,
// tranStateTableOffset, commitLogOffset and commitOrRollback are required.
func DecodeEndTransactionHeader(ext map[string]string) (EndTransactionHeader, error) {
	h := ReadHeader(ext)
	e := EndTransactionHeader{
		ProducerGroup:        h.Str("producerGroup"),
		TranStateTableOffset: h.Int64("tranStateTableOffset"),
		CommitLogOffset:      h.Int64("commitLogOffset"),
		CommitOrRollback:     h.Int32("commitOrRollback"),
		FromTransactionCheck: h.OptBool("fromTransactionCheck", false),
		MsgID:                h.OptStr("msgId"),
		TransactionID:        h.OptStr("transactionId"),
		BrokerName:           h.OptStr("bname"),
	}
	return e, h.Err()
}

// Ext encodes the header.
func (e EndTransactionHeader) Ext() map[string]string {
	return map[string]string{
		"producerGroup": e.ProducerGroup, "tranStateTableOffset": ltoa(e.TranStateTableOffset),
		"commitLogOffset": ltoa(e.CommitLogOffset), "commitOrRollback": itoa(e.CommitOrRollback),
		"fromTransactionCheck": strconv.FormatBool(e.FromTransactionCheck), "msgId": e.MsgID,
		"transactionId": e.TransactionID, "bname": e.BrokerName,
	}
}

// CheckTransactionStateHeader is RocketMQ's
// CheckTransactionStateRequestHeader; the request's body is the half
// message (one stored record, its topic and queue restored to the real
// ones).
type CheckTransactionStateHeader struct {
	TranStateTableOffset int64
	CommitLogOffset      int64
	MsgID                string
	TransactionID        string
	OffsetMsgID          string
}

// DecodeCheckTransactionStateHeader reads the header; the two offsets are
// required.
func DecodeCheckTransactionStateHeader(ext map[string]string) (CheckTransactionStateHeader, error) {
	h := ReadHeader(ext)
	c := CheckTransactionStateHeader{
		TranStateTableOffset: h.Int64("tranStateTableOffset"),
		CommitLogOffset:      h.Int64("commitLogOffset"),
		MsgID:                h.OptStr("msgId"),
		TransactionID:        h.OptStr("transactionId"),
		OffsetMsgID:          h.OptStr("offsetMsgId"),
	}
	return c, h.Err()
}

// Ext encodes the header.
func (c CheckTransactionStateHeader) Ext() map[string]string {
	return map[string]string{
		"tranStateTableOffset": ltoa(c.TranStateTableOffset), "commitLogOffset": ltoa(c.CommitLogOffset),
		"msgId": c.MsgID, "transactionId": c.TransactionID, "offsetMsgId": c.OffsetMsgID,
	}
}
