package message

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Layout of one inner message of a SEND_BATCH_MESSAGE body. Frozen.
const (
	// MinBatchItemSize is an inner message with no body and no properties.
	MinBatchItemSize = 4 + 4 + 4 + 4 + 4 + 2
	// batchMagic and batchBodyCRC are what clients write; brokers ignore
	// both fields and so does DecodeBatch.
	batchMagic   = 0
	batchBodyCRC = 0
)

// EncodeBatch encodes msgs as a SEND_BATCH_MESSAGE body, the layout the
// official clients send. Topic, queue and TransactionID travel in the
// request header and are not encoded.
func EncodeBatch(msgs []*Message) ([]byte, error) {
	size := 0
	for i, m := range msgs {
		propLen, err := checkProperties(m.Properties)
		if err != nil {
			return nil, fmt.Errorf("batch message %d: %w", i, err)
		}
		n := MinBatchItemSize + len(m.Body) + propLen
		if n > math.MaxInt32 {
			return nil, fmt.Errorf("batch message %d: %w: %d bytes", i, ErrBodyTooLarge, n)
		}
		size += n
	}
	dst := slices.Grow([]byte(nil), size)
	for _, m := range msgs {
		dst = appendBatchItem(dst, m)
	}
	return dst, nil
}

func appendBatchItem(dst []byte, m *Message) []byte {
	be := binary.BigEndian
	propLen := PropertiesLen(m.Properties)
	dst = be.AppendUint32(dst, uint32(MinBatchItemSize+len(m.Body)+propLen))
	dst = be.AppendUint32(dst, batchMagic)
	dst = be.AppendUint32(dst, batchBodyCRC)
	dst = be.AppendUint32(dst, uint32(m.Flag))
	dst = be.AppendUint32(dst, uint32(len(m.Body)))
	dst = append(dst, m.Body...)
	dst = be.AppendUint16(dst, uint16(propLen))
	return AppendProperties(dst, m.Properties)
}

// DecodeBatch decodes a SEND_BATCH_MESSAGE body; every message gets topic.
// Each inner TOTALSIZE must agree with its fields, so a body that is cut
// short or padded is rejected rather than half-stored.
func DecodeBatch(body []byte, topic string) ([]*Message, error) {
	items, err := DecodeBatchItems(body)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	msgs := make([]*Message, 0, len(items))
	for i, it := range items {
		m := &Message{Topic: topic, Flag: it.Flag}
		if len(it.Body) > 0 {
			m.Body = append([]byte(nil), it.Body...)
		}
		if m.Properties, err = DecodeProperties(it.Props); err != nil {
			return nil, fmt.Errorf("batch message %d: %w", i, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}
