package message

import "encoding/binary"

// lay builds expected byte slices field by field, independently of the
// encoders under test.
type lay struct{ b []byte }

func (l *lay) u8(v uint8) *lay   { l.b = append(l.b, v); return l }
func (l *lay) u16(v uint16) *lay { l.b = binary.BigEndian.AppendUint16(l.b, v); return l }
func (l *lay) u32(v uint32) *lay { l.b = binary.BigEndian.AppendUint32(l.b, v); return l }
func (l *lay) u64(v uint64) *lay { l.b = binary.BigEndian.AppendUint64(l.b, v); return l }
func (l *lay) raw(v ...byte) *lay {
	l.b = append(l.b, v...)
	return l
}
func (l *lay) str(s string) *lay { l.b = append(l.b, s...); return l }
