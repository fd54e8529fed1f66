// Package wire is the big-endian binary encoding of raftmq's replicated
// records: raft entries and snapshots (dledger) and the broker group's
// metadata commands (broker/meta). It is the one place the field
// primitives are written, so every frozen layout built on it uses the same
// integers, booleans, strings and counts:
//
//	u8, u16, u32, u64  big-endian
//	i32, i64           two's complement, as u32/u64
//	bool               u8, 0 or 1 (any other byte is an error)
//	str                u16 length + bytes (names far below 64 KiB)
//	count              u32 element count, checked against what remains
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrMalformed is wrapped by every error when the caller gave no sentinel
// of its own.
var ErrMalformed = errors.New("wire: malformed encoding")

// Encoder appends fields to B. The first problem latches Err and later
// fields are still appended (so lengths stay consistent), so callers check
// Err once at the end.
type Encoder struct {
	B   []byte
	Err error
	// Sentinel is wrapped by Err; nil means ErrMalformed.
	Sentinel error
}

func (e *Encoder) fail(format string, args ...any) {
	if e.Err == nil {
		s := e.Sentinel
		if s == nil {
			s = ErrMalformed
		}
		e.Err = fmt.Errorf("%w: "+format, append([]any{s}, args...)...)
	}
}

// U8 appends v.
func (e *Encoder) U8(v uint8) { e.B = append(e.B, v) }

// U16 appends v.
func (e *Encoder) U16(v uint16) { e.B = binary.BigEndian.AppendUint16(e.B, v) }

// U32 appends v.
func (e *Encoder) U32(v uint32) { e.B = binary.BigEndian.AppendUint32(e.B, v) }

// U64 appends v.
func (e *Encoder) U64(v uint64) { e.B = binary.BigEndian.AppendUint64(e.B, v) }

// I32 appends v.
func (e *Encoder) I32(v int32) { e.U32(uint32(v)) }

// I64 appends v.
func (e *Encoder) I64(v int64) { e.U64(uint64(v)) }

// Bool appends v as 0 or 1.
func (e *Encoder) Bool(v bool) {
	if v {
		e.U8(1)
		return
	}
	e.U8(0)
}

// Str appends s with a u16 length; a longer s is an error (and is cut).
func (e *Encoder) Str(s string) {
	if len(s) > math.MaxUint16 {
		e.fail("string of %d bytes", len(s))
		s = s[:math.MaxUint16]
	}
	e.U16(uint16(len(s)))
	e.B = append(e.B, s...)
}

// Count appends a u32 element count.
func (e *Encoder) Count(n int) {
	if n < 0 || n > math.MaxUint32 {
		e.fail("%d elements", n)
	}
	e.U32(uint32(n))
}

// Decoder reads what Encoder wrote from B at Off. The first short or bad
// read latches Err and turns every later read into a zero value, so
// callers check Err once.
type Decoder struct {
	B   []byte
	Off int
	Err error
	// Sentinel is wrapped by Err; nil means ErrMalformed.
	Sentinel error
}

func (d *Decoder) fail(format string, args ...any) {
	if d.Err == nil {
		s := d.Sentinel
		if s == nil {
			s = ErrMalformed
		}
		d.Err = fmt.Errorf("%w: "+format, append([]any{s}, args...)...)
	}
}

func (d *Decoder) need(n int) bool {
	if d.Err != nil {
		return false
	}
	if n < 0 || len(d.B)-d.Off < n {
		d.fail("truncated at byte %d (need %d of %d)", d.Off, n, len(d.B))
		return false
	}
	return true
}

// U8 reads a byte.
func (d *Decoder) U8() uint8 {
	if !d.need(1) {
		return 0
	}
	v := d.B[d.Off]
	d.Off++
	return v
}

// U16 reads a u16.
func (d *Decoder) U16() uint16 {
	if !d.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(d.B[d.Off:])
	d.Off += 2
	return v
}

// U32 reads a u32.
func (d *Decoder) U32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.B[d.Off:])
	d.Off += 4
	return v
}

// U64 reads a u64.
func (d *Decoder) U64() uint64 {
	if !d.need(8) {
		return 0
	}
	v := binary.BigEndian.Uint64(d.B[d.Off:])
	d.Off += 8
	return v
}

// I32 reads an i32.
func (d *Decoder) I32() int32 { return int32(d.U32()) }

// I64 reads an i64.
func (d *Decoder) I64() int64 { return int64(d.U64()) }

// Bool reads a bool; a byte other than 0 or 1 is an error.
func (d *Decoder) Bool() bool {
	v := d.U8()
	if v > 1 {
		d.fail("bool byte %d", v)
	}
	return v == 1
}

// Str reads a u16-length string.
func (d *Decoder) Str() string {
	n := int(d.U16())
	if !d.need(n) {
		return ""
	}
	s := string(d.B[d.Off : d.Off+n])
	d.Off += n
	return s
}

// Count reads a u32 element count and rejects one that cannot fit in the
// remaining bytes at minElem bytes per element, so a corrupt count cannot
// make the caller allocate wildly.
func (d *Decoder) Count(minElem int) int {
	n := int(d.U32())
	if d.Err == nil && minElem > 0 && n > (len(d.B)-d.Off)/minElem {
		d.fail("count %d exceeds remaining %d bytes", n, len(d.B)-d.Off)
		return 0
	}
	return n
}

// Bytes returns the next n bytes, aliasing B (capacity clipped).
func (d *Decoder) Bytes(n int) []byte {
	if !d.need(n) {
		return nil
	}
	v := d.B[d.Off : d.Off+n : d.Off+n]
	d.Off += n
	return v
}

// End reports trailing bytes: a record is exactly its encoding.
func (d *Decoder) End() error {
	if d.Err == nil && d.Off != len(d.B) {
		d.fail("%d trailing bytes", len(d.B)-d.Off)
	}
	return d.Err
}
