package message

// Raw properties: the broker's batch path stores each inner message's
// property bytes as the producer sent them, without decoding them into a
// map and encoding them again, when they already are what
// EncodeProperties would write (canonical). Other encodings — the
// official Go client writes map order — take the decoding path.

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// CanonicalProperties reports whether raw is exactly EncodeProperties of
// the properties it holds: key\x01value\x02 pairs with non-empty keys in
// strictly increasing order and no separator inside a key or value.
func CanonicalProperties(raw []byte) bool {
	var prev []byte
	for len(raw) > 0 {
		end := bytes.IndexByte(raw, PropertySeparator)
		if end < 0 {
			return false // the final \x02 is missing
		}
		item := raw[:end]
		raw = raw[end+1:]
		k, v, ok := bytes.Cut(item, []byte{NameValueSeparator})
		if !ok || len(k) == 0 || bytes.IndexByte(v, NameValueSeparator) >= 0 {
			return false
		}
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return false
		}
		prev = k
	}
	return true
}

// RawProperty returns the value of key in raw properties (the first
// occurrence; canonical properties have one), and whether it is there.
func RawProperty(raw []byte, key string) ([]byte, bool) {
	for len(raw) > 0 {
		item := raw
		if i := bytes.IndexByte(raw, PropertySeparator); i >= 0 {
			item, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if k, v, ok := bytes.Cut(item, []byte{NameValueSeparator}); ok && string(k) == key {
			return v, true
		}
	}
	return nil, false
}

// BatchItem is one inner message of a SEND_BATCH_MESSAGE body, its body
// and properties aliasing the body it was decoded from.
type BatchItem struct {
	Flag  int32
	Body  []byte
	Props []byte
}

// DecodeBatchItems splits a SEND_BATCH_MESSAGE body into its inner
// messages, with the checks of DecodeBatch except the properties'
// encoding (see CanonicalProperties and DecodeProperties).
func DecodeBatchItems(body []byte) ([]BatchItem, error) {
	be := binary.BigEndian
	var out []BatchItem
	for off := 0; off < len(body); {
		b := body[off:]
		if len(b) < MinBatchItemSize {
			return nil, fmt.Errorf("batch message %d at byte %d: %w: %d bytes left", len(out), off, ErrTruncated, len(b))
		}
		size := int64(int32(be.Uint32(b)))
		if size < MinBatchItemSize || size > int64(len(b)) {
			return nil, fmt.Errorf("batch message %d at byte %d: %w: TOTALSIZE %d, %d bytes left", len(out), off, ErrTruncated, size, len(b))
		}
		item := b[:size:size]
		bodyLen := int64(int32(be.Uint32(item[16:])))
		if bodyLen < 0 || bodyLen > size-MinBatchItemSize {
			return nil, fmt.Errorf("batch message %d at byte %d: %w: BODYLEN %d in a %d-byte message", len(out), off, ErrCorrupt, bodyLen, size)
		}
		p := 20 + int(bodyLen)
		propLen := int(be.Uint16(item[p:]))
		if propLen > MaxPropertiesLen || propLen != len(item)-p-2 {
			return nil, fmt.Errorf("batch message %d at byte %d: %w: PROPLEN %d, %d bytes left", len(out), off, ErrCorrupt, propLen, len(item)-p-2)
		}
		it := BatchItem{Flag: int32(be.Uint32(item[12:])), Props: item[p+2:]}
		if bodyLen > 0 {
			it.Body = item[20:p]
		}
		out = append(out, it)
		off += int(size)
	}
	return out, nil
}

// AppendExtRaw is AppendExt with m's properties given as raw bytes,
// which the caller has checked are canonical (m.Properties is ignored).
func AppendExtRaw(dst []byte, m *MessageExt, raw []byte) ([]byte, error) {
	if len(raw) > MaxPropertiesLen {
		return dst, fmt.Errorf("%w: %d bytes, max %d", ErrPropertiesTooLong, len(raw), MaxPropertiesLen)
	}
	dst, err := appendExtHead(dst, m, len(raw))
	if err != nil {
		return dst, err
	}
	return append(dst, raw...), nil
}

// ExtRawSize is the number of bytes AppendExtRaw writes for m and raw.
func ExtRawSize(m *MessageExt, raw []byte) int {
	sysFlag := hostFlags(m.SysFlag, m.BornHost, m.StoreHost)
	return extSize(sysFlag, len(m.Body), len(m.Topic), len(raw))
}
