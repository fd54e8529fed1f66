package broker

// Building the stored records of a send: one RocketMQ stored-message record
// per message, with its tags code and index keys, ready for a
// PutMessagesCommand. Offsets and the store timestamp are left 0: the
// leader stamps them when it commits the entry.

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wallclock"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
	"github.com/raftmq/raftmq/store"
)

// illegalRemark is RocketMQ's remark for a message the store refuses.
const illegalRemark = "the message is illegal, maybe msg body or properties length not matched"

// recordBuilder turns messages into stored records: sends, retries and
// scheduled deliveries all go through it.
type recordBuilder struct {
	cluster   string
	storeHost netip.AddrPort
	maxBody   int
	park      *parker
}

// single builds the record of a SEND_MESSAGE(_V2).
func (rb *recordBuilder) single(sr *sendRequest) ([]dledger.Message, *remoting.Command) {
	req, h := sr.req, sr.h
	if len(req.Body) > rb.maxBody {
		return nil, errResponse(req, remoting.ResMessageIllegal, "%s: body %d bytes, limit %d", illegalRemark, len(req.Body), rb.maxBody)
	}
	if len(h.Properties) > message.MaxPropertiesLen {
		return nil, errResponse(req, remoting.ResMessageIllegal, "%s: properties %d bytes, limit %d", illegalRemark, len(h.Properties), message.MaxPropertiesLen)
	}
	if sr.propsErr != nil {
		return nil, errResponse(req, remoting.ResMessageIllegal, "%s: %v", illegalRemark, sr.propsErr)
	}
	props := sr.props
	if props == nil {
		props = map[string]string{}
	}
	// RocketMQ stamps the cluster name on every message it stores.
	props[message.PropertyCluster] = rb.cluster
	if sr.toDLQ {
		delete(props, message.PropertyDelayLevel) // dead letters wait for no one
	}
	m := &message.MessageExt{
		Message:        message.Message{Topic: h.Topic, Flag: h.Flag, Properties: props, Body: req.Body},
		QueueID:        sr.queueID,
		SysFlag:        h.SysFlag,
		BornTimestamp:  h.BornTimestamp,
		BornHost:       bornHost(req),
		StoreHost:      rb.storeHost,
		ReconsumeTimes: h.ReconsumeTimes,
	}
	dm, err := rb.parked(m, wallclock.Now())
	if err != nil {
		return nil, errResponse(req, remoting.ResMessageIllegal, "%v", err)
	}
	sr.uniqs = append(sr.uniqs[:0], props[message.PropertyUniqKey])
	return []dledger.Message{dm}, nil
}

// batch builds one record per inner message of a SEND_BATCH_MESSAGE.
// As RocketMQ, the whole batch body is bounded by MaxMessageSize, and
// retry topics, delay levels and half messages are refused in batches.
func (rb *recordBuilder) batch(sr *sendRequest) ([]dledger.Message, *remoting.Command) {
	req, h := sr.req, sr.h
	if len(req.Body) > rb.maxBody {
		return nil, errResponse(req, remoting.ResMessageIllegal, "%s: batch body %d bytes, limit %d", illegalRemark, len(req.Body), rb.maxBody)
	}
	if protocol.IsRetryTopic(h.Topic) {
		return nil, errResponse(req, remoting.ResMessageIllegal, "batch request does not support retry group %s", h.Topic)
	}
	if message.TransactionValue(h.SysFlag) == message.SysFlagTransactionPrepared {
		return nil, errResponse(req, remoting.ResMessageIllegal, "batch request does not support transaction messages")
	}
	items, err := message.DecodeBatchItems(req.Body)
	if err != nil {
		return nil, errResponse(req, remoting.ResMessageIllegal, "bad batch body: %v", err)
	}
	if len(items) == 0 {
		return nil, errResponse(req, remoting.ResMessageIllegal, "empty batch")
	}
	born := bornHost(req)
	out := make([]dledger.Message, 0, len(items))
	for i, it := range items {
		m := &message.MessageExt{
			Message:        message.Message{Topic: h.Topic, Flag: it.Flag, Body: it.Body},
			QueueID:        sr.queueID,
			SysFlag:        h.SysFlag,
			BornTimestamp:  h.BornTimestamp,
			BornHost:       born,
			StoreHost:      rb.storeHost,
			ReconsumeTimes: h.ReconsumeTimes,
		}
		var dm dledger.Message
		var uniq string
		if message.CanonicalProperties(it.Props) {
			// As the producer encoded them: stored without a map.
			if rawDelayLevel(it.Props) > 0 {
				return nil, errResponse(req, remoting.ResMessageIllegal, "message %d: delay level is not supported in batch", i)
			}
			dm, uniq, err = rb.storedRaw(m, it.Props)
		} else {
			if m.Properties, err = message.DecodeProperties(it.Props); err != nil {
				return nil, errResponse(req, remoting.ResMessageIllegal, "bad batch body: batch message %d: %v", i, err)
			}
			if m.DelayLevel() > 0 {
				return nil, errResponse(req, remoting.ResMessageIllegal, "message %d: delay level is not supported in batch", i)
			}
			m.Body = append([]byte(nil), it.Body...)
			dm, err = rb.stored(m)
			uniq = m.UniqKey()
		}
		if err != nil {
			return nil, errResponse(req, remoting.ResMessageIllegal, "%s: message %d: %v", illegalRemark, i, err)
		}
		out = append(out, dm)
		sr.uniqs = append(sr.uniqs, uniq)
	}
	return out, nil
}

// rawDelayLevel is the DELAY property of canonical raw properties, as
// Message.DelayLevel reads it (0 when absent or not a number).
func rawDelayLevel(raw []byte) int {
	v, ok := message.RawProperty(raw, message.PropertyDelayLevel)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		return 0
	}
	return n
}

// storedRaw is stored for a message whose properties are canonical raw
// bytes (m.Properties unused): the record carries them as they are, and
// the tags code and index keys are read from them. It also returns the
// UNIQ_KEY.
func (rb *recordBuilder) storedRaw(m *message.MessageExt, raw []byte) (dledger.Message, string, error) {
	rec, err := message.AppendExtRaw(make([]byte, 0, message.ExtRawSize(m, raw)), m, raw)
	if err != nil {
		return dledger.Message{}, "", err
	}
	var tagsCode int64
	if tags, _ := message.RawProperty(raw, message.PropertyTags); len(tags) > 0 {
		tagsCode = message.TagsHashCode(string(tags))
	}
	var keys []string
	if ks, ok := message.RawProperty(raw, message.PropertyKeys); ok {
		for _, k := range strings.Fields(string(ks)) {
			keys = append(keys, store.IndexKey(m.Topic, k))
		}
	}
	u, _ := message.RawProperty(raw, message.PropertyUniqKey)
	uniq := string(u)
	if uniq != "" {
		keys = append(keys, store.IndexKey(m.Topic, uniq))
	}
	return dledger.Message{Topic: m.Topic, QueueID: m.QueueID, TagsCode: tagsCode, Keys: keys, Record: rec}, uniq, nil
}

// parked builds m's record after redirecting it to its parking queue when
// it must wait (a DELAY level or a timer): its consumequeue tags code is
// then its deliver time. The error is a bad timer property or a record
// that does not encode.
func (rb *recordBuilder) parked(m *message.MessageExt, now time.Time) (dledger.Message, error) {
	deliverAt, parked, err := rb.park.park(m, now)
	if err != nil {
		return dledger.Message{}, err
	}
	dm, err := rb.stored(m)
	if err != nil {
		return dledger.Message{}, &illegalError{err}
	}
	if parked {
		dm.TagsCode = deliverAt // schedule queues order by deliver time
	}
	return dm, nil
}

// illegalError words a record that does not encode as RocketMQ's remark.
type illegalError struct{ err error }

func (e *illegalError) Error() string { return illegalRemark + ": " + e.err.Error() }
func (e *illegalError) Unwrap() error { return e.err }

// stored encodes m as a stored record with its tags code and index keys
// (each KEYS entry and the UNIQ_KEY, as topic#key).
func (rb *recordBuilder) stored(m *message.MessageExt) (dledger.Message, error) {
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
		keys = append(keys, store.IndexKey(m.Topic, k))
	}
	if u := m.UniqKey(); u != "" {
		keys = append(keys, store.IndexKey(m.Topic, u))
	}
	return dledger.Message{Topic: m.Topic, QueueID: m.QueueID, TagsCode: tagsCode, Keys: keys, Record: rec}, nil
}
