package message

import (
	"encoding/binary"
	"fmt"
)

// DefaultMaxBodySize bounds a decompressed body when DecodeExtOpts does not
// say otherwise. Producers refuse bodies over 4 MiB before compression, so
// a larger inflated body is hostile or corrupt; the margin is generous.
const DefaultMaxBodySize = 16 << 20

// DecodeExtOpts selects the optional work of decoding. The zero value only
// parses: it trusts BODYCRC and leaves compressed bodies compressed.
type DecodeExtOpts struct {
	// VerifyCRC rejects a record whose BODYCRC does not match its body.
	VerifyCRC bool
	// Decompress inflates a body whose record has SysFlagCompressed and
	// clears that bit in the result, so re-encoding stores what it holds.
	Decompress bool
	// MaxBodySize bounds an inflated body; 0 means DefaultMaxBodySize.
	MaxBodySize int
}

// DecodeExt decodes the record at the start of b with the zero options and
// returns it with the number of bytes it occupied.
func DecodeExt(b []byte) (*MessageExt, int, error) {
	return DecodeExtOpts{}.DecodeExt(b)
}

// DecodeExts decodes a pull body, a concatenation of records, with the zero
// options.
func DecodeExts(b []byte) ([]*MessageExt, error) {
	return DecodeExtOpts{}.DecodeExts(b)
}

// DecodeExts decodes a concatenation of records. It fails on the first bad
// record: a pull body is produced whole by the broker, so a bad record
// means the rest cannot be trusted either. The messages are allocated
// together and their bodies share one buffer (none aliases b), so holding
// one message holds the memory of the whole pull.
func (o DecodeExtOpts) DecodeExts(b []byte) ([]*MessageExt, error) {
	n := countRecords(b)
	if n == 0 && len(b) == 0 {
		return nil, nil
	}
	exts := make([]MessageExt, n)
	msgs := make([]*MessageExt, 0, n)
	arena := make([]byte, 0, len(b))
	topic := ""
	for off := 0; off < len(b); {
		var m *MessageExt
		if i := len(msgs); i < n {
			m = &exts[i]
		} else {
			m = new(MessageExt) // countRecords stopped early: the loop fails below
		}
		size, err := o.decodeInto(b[off:], m, &arena, topic)
		if err != nil {
			return nil, fmt.Errorf("record %d at byte %d: %w", len(msgs), off, err)
		}
		topic = m.Topic
		msgs = append(msgs, m)
		off += size
	}
	return msgs, nil
}

// countRecords is how many well-sized records b starts with.
func countRecords(b []byte) int {
	n := 0
	for len(b) > 0 {
		size, err := PeekTotalSize(b)
		if err != nil || size > len(b) {
			break
		}
		b, n = b[size:], n+1
	}
	return n
}

// DecodeExt decodes the record at the start of b and returns it with the
// number of bytes it occupied. The result does not alias b. Every length is
// checked against TOTALSIZE, and TOTALSIZE against len(b), before anything
// is allocated, so hostile input cannot cause a panic or a large allocation.
func (o DecodeExtOpts) DecodeExt(b []byte) (*MessageExt, int, error) {
	m := new(MessageExt)
	size, err := o.decodeInto(b, m, nil, "")
	if err != nil {
		return nil, 0, err
	}
	return m, size, nil
}

// decodeInto decodes the record at the start of b into m. A stored body is
// copied into arena when its capacity holds it (else into a buffer of its
// own); topic, when the record's topic equals it, is shared.
func (o DecodeExtOpts) decodeInto(b []byte, m *MessageExt, arena *[]byte, topic string) (int, error) {
	size, err := PeekTotalSize(b)
	if err != nil {
		return 0, err
	}
	if size > len(b) {
		return 0, fmt.Errorf("%w: TOTALSIZE %d, have %d bytes", ErrTruncated, size, len(b))
	}
	rec := b[:size]
	if magic := binary.BigEndian.Uint32(rec[offMagic:]); magic != MagicCode {
		return 0, fmt.Errorf("%w: %#08x", ErrBadMagic, magic)
	}
	l, _, err := recordLayout(rec)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err := decodeFixed(rec, l, m); err != nil {
		return 0, err
	}
	body, propBytes, err := decodeVariable(rec, l, m, topic)
	if err != nil {
		return 0, err
	}
	if o.VerifyCRC {
		if got := BodyCRC32(body); got != m.BodyCRC {
			return 0, fmt.Errorf("%w: stored %#08x, computed %#08x", ErrCRCMismatch, m.BodyCRC, got)
		}
	}
	if m.Properties, err = DecodeProperties(propBytes); err != nil {
		return 0, err
	}
	if m.Body, err = o.body(body, &m.SysFlag, arena); err != nil {
		return 0, err
	}
	return size, nil
}

// decodeFixed reads TOTALSIZE through PREPAREDTXOFFSET; recordLayout has
// checked that rec is long enough.
func decodeFixed(rec []byte, l layout, m *MessageExt) error {
	be := binary.BigEndian
	*m = MessageExt{
		StoreSize:                 int32(be.Uint32(rec[offTotalSize:])),
		BodyCRC:                   be.Uint32(rec[offBodyCRC:]),
		QueueID:                   int32(be.Uint32(rec[offQueueID:])),
		QueueOffset:               int64(be.Uint64(rec[offQueueOffset:])),
		CommitLogOffset:           int64(be.Uint64(rec[offCommitLogOff:])),
		SysFlag:                   int32(be.Uint32(rec[offSysFlag:])),
		BornTimestamp:             int64(be.Uint64(rec[offBornTimestamp:])),
		StoreTimestamp:            int64(be.Uint64(rec[l.storeTimestamp:])),
		ReconsumeTimes:            int32(be.Uint32(rec[l.reconsumeTimes:])),
		PreparedTransactionOffset: int64(be.Uint64(rec[l.preparedTxOff:])),
	}
	m.Flag = int32(be.Uint32(rec[offFlag:]))
	var err error
	if m.BornHost, err = readHost(rec[offBornHost:], m.SysFlag&SysFlagBornHostV6 != 0); err != nil {
		return fmt.Errorf("born host: %w", err)
	}
	if m.StoreHost, err = readHost(rec[l.storeHost:], m.SysFlag&SysFlagStoreHostV6 != 0); err != nil {
		return fmt.Errorf("store host: %w", err)
	}
	return nil
}

// decodeVariable reads BODY, TOPIC and PROPS, sets m.Topic (topic when
// equal) and returns the body and property bytes (aliasing rec). The
// fields must fill rec exactly.
func decodeVariable(rec []byte, l layout, m *MessageExt, topic string) (body, props []byte, err error) {
	p := l.bodyLen
	bodyLen := int64(int32(binary.BigEndian.Uint32(rec[p:])))
	p += 4
	// Topic length byte and PROPLEN must still fit after the body.
	if bodyLen < 0 || bodyLen > int64(len(rec)-p-3) {
		return nil, nil, fmt.Errorf("%w: BODYLEN %d in a %d-byte record", ErrCorrupt, bodyLen, len(rec))
	}
	body = rec[p : p+int(bodyLen)]
	p += int(bodyLen)
	topicLen := int(rec[p])
	p++
	if topicLen == 0 || topicLen > MaxTopicLen || topicLen > len(rec)-p-2 {
		return nil, nil, fmt.Errorf("%w: TOPICLEN %d in a %d-byte record", ErrCorrupt, topicLen, len(rec))
	}
	if t := rec[p : p+topicLen]; string(t) == topic {
		m.Topic = topic
	} else {
		m.Topic = string(t)
	}
	p += topicLen
	propLen := int(binary.BigEndian.Uint16(rec[p:]))
	p += 2
	if propLen > MaxPropertiesLen || propLen != len(rec)-p {
		return nil, nil, fmt.Errorf("%w: PROPLEN %d, %d bytes left", ErrCorrupt, propLen, len(rec)-p)
	}
	return body, rec[p:], nil
}

// body copies (into arena when it has room) or inflates the stored body
// for the decoded message.
func (o DecodeExtOpts) body(stored []byte, sysFlag *int32, arena *[]byte) ([]byte, error) {
	if !o.Decompress || *sysFlag&SysFlagCompressed == 0 {
		if len(stored) == 0 {
			return nil, nil
		}
		if arena == nil || cap(*arena)-len(*arena) < len(stored) {
			return append([]byte(nil), stored...), nil
		}
		a := *arena
		start := len(a)
		a = append(a, stored...)
		*arena = a
		return a[start:len(a):len(a)], nil
	}
	max := o.MaxBodySize
	if max <= 0 {
		max = DefaultMaxBodySize
	}
	out, err := Decompress(stored, max)
	if err != nil {
		return nil, err
	}
	*sysFlag &^= SysFlagCompressed
	return out, nil
}
