package remoting

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// rocketMQFixedLen is the binary header without remark and ext bytes:
// code 2, language 1, version 2, opaque 4, flag 4, remark length 4,
// ext length 4.
const rocketMQFixedLen = 21

// appendRocketMQHeader writes the binary header. Ext fields are written in
// sorted key order so the same command always yields the same bytes.
func appendRocketMQHeader(dst []byte, c *Command) ([]byte, error) {
	if len(c.Remark) > math.MaxInt32 {
		return dst, fmt.Errorf("%w: remark of %d bytes", ErrBadHeader, len(c.Remark))
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Code))
	dst = append(dst, LanguageCode(c.Language))
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var stack [32]string
	keys := stack[:0]
	for k := range c.ExtFields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := c.ExtFields[k]
		if len(k) > math.MaxInt16 || len(v) > math.MaxInt32 {
			return dst[:lenAt], fmt.Errorf("%w: ext field %.32q too long", ErrBadHeader, k)
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
		dst = append(dst, k...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	}
	extLen := len(dst) - lenAt - 4
	if extLen > math.MaxInt32 {
		return dst[:lenAt], fmt.Errorf("%w: ext fields of %d bytes", ErrBadHeader, extLen)
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(extLen))
	return dst, nil
}

// decodeRocketMQHeader parses a binary header. Every length is checked
// against the bytes that remain before anything is sliced or allocated, and
// the header must be consumed exactly: the frame states its length, so
// leftovers mean the peer and we disagree about the layout.
func decodeRocketMQHeader(h []byte) (*Command, error) {
	if len(h) < rocketMQFixedLen {
		return nil, fmt.Errorf("%w: binary header of %d bytes, need %d", ErrBadHeader, len(h), rocketMQFixedLen)
	}
	be := binary.BigEndian
	c := &Command{
		Code:          int16(be.Uint16(h[0:])),
		Language:      LanguageName(h[2]),
		Version:       int16(be.Uint16(h[3:])),
		Opaque:        int32(be.Uint32(h[5:])),
		Flag:          int32(be.Uint32(h[9:])),
		SerializeType: SerializeRocketMQ,
	}
	rest := h[13:]
	remark, rest, err := takeBytes(rest, int64(int32(be.Uint32(rest))), 4, "remark")
	if err != nil {
		return nil, err
	}
	c.Remark = string(remark)
	if len(rest) < 4 {
		return nil, fmt.Errorf("%w: binary header truncated before ext length", ErrBadHeader)
	}
	ext, rest, err := takeBytes(rest, int64(int32(be.Uint32(rest))), 4, "ext fields")
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after binary header", ErrBadHeader, len(rest))
	}
	if c.ExtFields, err = decodeRocketMQExt(ext); err != nil {
		return nil, err
	}
	return c, nil
}

// takeBytes skips a length prefix of prefixLen bytes (already parsed into
// n) and returns the n bytes after it and what follows.
func takeBytes(b []byte, n int64, prefixLen int, what string) (field, rest []byte, err error) {
	if n < 0 || n > int64(len(b)-prefixLen) {
		return nil, nil, fmt.Errorf("%w: %s length %d with %d bytes left", ErrBadHeader, what, n, len(b)-prefixLen)
	}
	end := prefixLen + int(n)
	return b[prefixLen:end], b[end:], nil
}

func decodeRocketMQExt(b []byte) (map[string]string, error) {
	ext := make(map[string]string)
	be := binary.BigEndian
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, fmt.Errorf("%w: ext key length truncated", ErrBadHeader)
		}
		key, rest, err := takeBytes(b, int64(int16(be.Uint16(b))), 2, "ext key")
		if err != nil {
			return nil, err
		}
		if len(rest) < 4 {
			return nil, fmt.Errorf("%w: ext value length truncated", ErrBadHeader)
		}
		val, rest, err := takeBytes(rest, int64(int32(be.Uint32(rest))), 4, "ext value")
		if err != nil {
			return nil, err
		}
		ext[string(key)] = string(val)
		b = rest
	}
	return ext, nil
}
