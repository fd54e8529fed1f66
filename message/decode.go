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
// means the rest cannot be trusted either.
func (o DecodeExtOpts) DecodeExts(b []byte) ([]*MessageExt, error) {
	var msgs []*MessageExt
	for off := 0; off < len(b); {
		m, n, err := o.DecodeExt(b[off:])
		if err != nil {
			return nil, fmt.Errorf("record %d at byte %d: %w", len(msgs), off, err)
		}
		msgs = append(msgs, m)
		off += n
	}
	return msgs, nil
}

// DecodeExt decodes the record at the start of b and returns it with the
// number of bytes it occupied. The result does not alias b. Every length is
// checked against TOTALSIZE, and TOTALSIZE against len(b), before anything
// is allocated, so hostile input cannot cause a panic or a large allocation.
func (o DecodeExtOpts) DecodeExt(b []byte) (*MessageExt, int, error) {
	size, err := PeekTotalSize(b)
	if err != nil {
		return nil, 0, err
	}
	if size > len(b) {
		return nil, 0, fmt.Errorf("%w: TOTALSIZE %d, have %d bytes", ErrTruncated, size, len(b))
	}
	rec := b[:size]
	if magic := binary.BigEndian.Uint32(rec[offMagic:]); magic != MagicCode {
		return nil, 0, fmt.Errorf("%w: %#08x", ErrBadMagic, magic)
	}
	l, _, err := recordLayout(rec)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	m, err := decodeFixed(rec, l)
	if err != nil {
		return nil, 0, err
	}
	body, propBytes, err := decodeVariable(rec, l, m)
	if err != nil {
		return nil, 0, err
	}
	if o.VerifyCRC {
		if got := BodyCRC32(body); got != m.BodyCRC {
			return nil, 0, fmt.Errorf("%w: stored %#08x, computed %#08x", ErrCRCMismatch, m.BodyCRC, got)
		}
	}
	if m.Properties, err = DecodeProperties(propBytes); err != nil {
		return nil, 0, err
	}
	if m.Body, err = o.body(body, &m.SysFlag); err != nil {
		return nil, 0, err
	}
	return m, size, nil
}

// decodeFixed reads TOTALSIZE through PREPAREDTXOFFSET; recordLayout has
// checked that rec is long enough.
func decodeFixed(rec []byte, l layout) (*MessageExt, error) {
	be := binary.BigEndian
	m := &MessageExt{
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
		return nil, fmt.Errorf("born host: %w", err)
	}
	if m.StoreHost, err = readHost(rec[l.storeHost:], m.SysFlag&SysFlagStoreHostV6 != 0); err != nil {
		return nil, fmt.Errorf("store host: %w", err)
	}
	return m, nil
}

// decodeVariable reads BODY, TOPIC and PROPS, sets m.Topic and returns the
// body and property bytes (aliasing rec). The fields must fill rec exactly.
func decodeVariable(rec []byte, l layout, m *MessageExt) (body, props []byte, err error) {
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
	m.Topic = string(rec[p : p+topicLen])
	p += topicLen
	propLen := int(binary.BigEndian.Uint16(rec[p:]))
	p += 2
	if propLen > MaxPropertiesLen || propLen != len(rec)-p {
		return nil, nil, fmt.Errorf("%w: PROPLEN %d, %d bytes left", ErrCorrupt, propLen, len(rec)-p)
	}
	return body, rec[p:], nil
}

// body copies or inflates the stored body for the decoded message.
func (o DecodeExtOpts) body(stored []byte, sysFlag *int32) ([]byte, error) {
	if !o.Decompress || *sysFlag&SysFlagCompressed == 0 {
		if len(stored) == 0 {
			return nil, nil
		}
		return append([]byte(nil), stored...), nil
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
