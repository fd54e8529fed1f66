package broker

// Building the stored records of a send: one RocketMQ stored-message record
// per message, with its tags code and index keys, ready for a
// PutMessagesCommand. Offsets and the store timestamp are left 0: the
// leader stamps them when it commits the entry.

import (
	"strings"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/indexfile"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// illegalRemark is RocketMQ's remark for a message the store refuses.
const illegalRemark = "the message is illegal, maybe msg body or properties length not matched"

// buildSingle builds the record of a SEND_MESSAGE(_V2).
func (b *Broker) buildSingle(req *remoting.Command, h sendHeader, queueID int32) ([]dledger.Message, *remoting.Command) {
	if len(req.Body) > b.cfg.MaxMessageSize {
		return nil, errResponse(req, remoting.ResMessageIllegal, "%s: body %d bytes, limit %d", illegalRemark, len(req.Body), b.cfg.MaxMessageSize)
	}
	if len(h.properties) > message.MaxPropertiesLen {
		return nil, errResponse(req, remoting.ResMessageIllegal, "%s: properties %d bytes, limit %d", illegalRemark, len(h.properties), message.MaxPropertiesLen)
	}
	props, err := message.DecodeProperties([]byte(h.properties))
	if err != nil {
		return nil, errResponse(req, remoting.ResMessageIllegal, "%s: %v", illegalRemark, err)
	}
	if props == nil {
		props = map[string]string{}
	}
	// RocketMQ stamps the cluster name on every message it stores.
	props[message.PropertyCluster] = b.cfg.Cluster
	if h.toDLQ {
		delete(props, message.PropertyDelayLevel) // dead letters wait for no one
	}
	m := &message.MessageExt{
		Message:        message.Message{Topic: h.topic, Flag: h.flag, Properties: props, Body: req.Body},
		QueueID:        queueID,
		SysFlag:        h.sysFlag,
		BornTimestamp:  h.bornTimestamp,
		BornHost:       bornHost(req),
		StoreHost:      b.storeHost,
		ReconsumeTimes: h.reconsumeTimes,
	}
	deliverAt, parked, err := b.park(m, time.Now())
	if err != nil {
		return nil, errResponse(req, remoting.ResMessageIllegal, "%v", err)
	}
	dm, err := b.storedMessage(m)
	if err != nil {
		return nil, errResponse(req, remoting.ResMessageIllegal, "%s: %v", illegalRemark, err)
	}
	if parked {
		dm.TagsCode = deliverAt // schedule queues order by deliver time
	}
	return []dledger.Message{dm}, nil
}

// buildBatch builds one record per inner message of a SEND_BATCH_MESSAGE.
// As RocketMQ, the whole batch body is bounded by MaxMessageSize, and
// retry topics, delay levels and half messages are refused in batches.
func (b *Broker) buildBatch(req *remoting.Command, h sendHeader, queueID int32) ([]dledger.Message, *remoting.Command) {
	if len(req.Body) > b.cfg.MaxMessageSize {
		return nil, errResponse(req, remoting.ResMessageIllegal, "%s: batch body %d bytes, limit %d", illegalRemark, len(req.Body), b.cfg.MaxMessageSize)
	}
	if strings.HasPrefix(h.topic, RetryPrefix) {
		return nil, errResponse(req, remoting.ResMessageIllegal, "batch request does not support retry group %s", h.topic)
	}
	if message.TransactionValue(h.sysFlag) == message.SysFlagTransactionPrepared {
		return nil, errResponse(req, remoting.ResMessageIllegal, "batch request does not support transaction messages")
	}
	inner, err := message.DecodeBatch(req.Body, h.topic)
	if err != nil {
		return nil, errResponse(req, remoting.ResMessageIllegal, "bad batch body: %v", err)
	}
	if len(inner) == 0 {
		return nil, errResponse(req, remoting.ResMessageIllegal, "empty batch")
	}
	born := bornHost(req)
	out := make([]dledger.Message, 0, len(inner))
	for i, im := range inner {
		if im.DelayLevel() > 0 {
			return nil, errResponse(req, remoting.ResMessageIllegal, "message %d: delay level is not supported in batch", i)
		}
		m := &message.MessageExt{
			Message:        *im,
			QueueID:        queueID,
			SysFlag:        h.sysFlag,
			BornTimestamp:  h.bornTimestamp,
			BornHost:       born,
			StoreHost:      b.storeHost,
			ReconsumeTimes: h.reconsumeTimes,
		}
		dm, err := b.storedMessage(m)
		if err != nil {
			return nil, errResponse(req, remoting.ResMessageIllegal, "%s: message %d: %v", illegalRemark, i, err)
		}
		out = append(out, dm)
	}
	return out, nil
}

// storedMessage encodes m as a stored record with its tags code and index
// keys (each KEYS entry and the UNIQ_KEY, as topic#key).
func (b *Broker) storedMessage(m *message.MessageExt) (dledger.Message, error) {
	if message.PropertiesLen(m.Properties) > message.MaxPropertiesLen {
		return dledger.Message{}, message.ErrPropertiesTooLong
	}
	rec, err := message.AppendExt(make([]byte, 0, message.EncodedSize(m)), m)
	if err != nil {
		return dledger.Message{}, err
	}
	var tagsCode int64
	if tags := m.Tags(); tags != "" {
		tagsCode = message.TagsHashCode(tags)
	}
	var keys []string
	for _, k := range m.Keys() {
		keys = append(keys, indexfile.Key(m.Topic, k))
	}
	if u := m.UniqKey(); u != "" {
		keys = append(keys, indexfile.Key(m.Topic, u))
	}
	return dledger.Message{Topic: m.Topic, QueueID: m.QueueID, TagsCode: tagsCode, Keys: keys, Record: rec}, nil
}
