package dledger

import (
	"encoding/binary"
	"fmt"
	"math"
)

// encoder appends big-endian fields to a byte slice. Strings carry a u16
// length because every name the broker stores (topic, group, key) is far
// below 64 KiB and RocketMQ itself limits topics to 127 bytes.
type encoder struct {
	b   []byte
	err error
}

func (e *encoder) u8(v uint8)   { e.b = append(e.b, v) }
func (e *encoder) u16(v uint16) { e.b = binary.BigEndian.AppendUint16(e.b, v) }
func (e *encoder) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *encoder) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *encoder) i32(v int32)  { e.u32(uint32(v)) }
func (e *encoder) i64(v int64)  { e.u64(uint64(v)) }

func (e *encoder) bool(v bool) {
	if v {
		e.u8(1)
		return
	}
	e.u8(0)
}

func (e *encoder) str(s string) {
	if len(s) > math.MaxUint16 {
		if e.err == nil {
			e.err = fmt.Errorf("%w: string of %d bytes", ErrInvalidCommand, len(s))
		}
		s = s[:math.MaxUint16]
	}
	e.u16(uint16(len(s)))
	e.b = append(e.b, s...)
}

// count writes a u32 element count.
func (e *encoder) count(n int) {
	if n > math.MaxUint32 {
		e.err = fmt.Errorf("%w: %d elements", ErrInvalidCommand, n)
	}
	e.u32(uint32(n))
}

// decoder reads what encoder wrote. The first short read latches err and
// turns every later read into a zero value, so callers check err once.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) need(n int) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || len(d.b)-d.off < n {
		d.err = fmt.Errorf("%w: truncated at byte %d (need %d of %d)", ErrInvalidCommand, d.off, n, len(d.b))
		return false
	}
	return true
}

func (d *decoder) u8() uint8 {
	if !d.need(1) {
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) u16() uint16 {
	if !d.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(d.b[d.off:])
	d.off += 2
	return v
}

func (d *decoder) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) u64() uint64 {
	if !d.need(8) {
		return 0
	}
	v := binary.BigEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

func (d *decoder) i32() int32 { return int32(d.u32()) }
func (d *decoder) i64() int64 { return int64(d.u64()) }

func (d *decoder) bool() bool {
	v := d.u8()
	if v > 1 && d.err == nil {
		d.err = fmt.Errorf("%w: bool byte %d", ErrInvalidCommand, v)
	}
	return v == 1
}

func (d *decoder) str() string {
	n := int(d.u16())
	if !d.need(n) {
		return ""
	}
	s := string(d.b[d.off : d.off+n])
	d.off += n
	return s
}

// count reads a u32 element count and rejects counts that cannot fit in
// the remaining bytes, so a corrupt count cannot make us allocate wildly.
func (d *decoder) count(minElem int) int {
	n := int(d.u32())
	if d.err == nil && minElem > 0 && n > (len(d.b)-d.off)/minElem {
		d.err = fmt.Errorf("%w: count %d exceeds remaining %d bytes", ErrInvalidCommand, n, len(d.b)-d.off)
		return 0
	}
	return n
}

func (d *decoder) bytes(n int) []byte {
	if !d.need(n) {
		return nil
	}
	v := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return v
}

// end reports trailing garbage: a command is exactly its encoding.
func (d *decoder) end() error {
	if d.err == nil && d.off != len(d.b) {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrInvalidCommand, len(d.b)-d.off)
	}
	return d.err
}
