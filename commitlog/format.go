package commitlog

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/hashicorp/raft"
)

// Record framing; see doc.go. Frozen: changing any of these breaks every
// file already written.
const (
	recordVersion    = 1
	frameHeaderSize  = 8                     // length:4 crc:4
	recordFixedSize  = 8 + 8 + 8 + 1 + 1 + 4 // index term appendedAt type version extLen
	recordHeaderSize = frameHeaderSize + recordFixedSize
	// maxRecordSize bounds the length field so a torn length cannot make
	// recovery allocate gigabytes.
	maxRecordSize = 1 << 30
	// zeroTime encodes time.Time{} whose UnixNano is out of range.
	zeroTime = math.MinInt64
)

// Entry index record; see doc.go. Frozen.
const entrySize = 32

// Checkpoint file; see doc.go. Frozen.
const (
	checkpointMagic   = 0x524d434b // "RMCK"
	checkpointVersion = 1
	checkpointSize    = 44
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordSize is the framed size of l.
func recordSize(l *raft.Log) int {
	return recordHeaderSize + len(l.Extensions) + len(l.Data)
}

// appendRecord frames l onto buf.
func appendRecord(buf []byte, l *raft.Log) []byte {
	start := len(buf)
	payload := recordFixedSize + len(l.Extensions) + len(l.Data)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(payload))
	buf = binary.LittleEndian.AppendUint32(buf, 0) // crc, filled below
	buf = binary.LittleEndian.AppendUint64(buf, l.Index)
	buf = binary.LittleEndian.AppendUint64(buf, l.Term)
	at := int64(zeroTime)
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	buf = binary.LittleEndian.AppendUint64(buf, uint64(at))
	buf = append(buf, byte(l.Type), recordVersion)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(l.Extensions)))
	buf = append(buf, l.Extensions...)
	buf = append(buf, l.Data...)
	rec := buf[start:]
	binary.LittleEndian.PutUint32(rec[4:], recordCRC(rec))
	return buf
}

// recordCRC covers the length field and the payload, so a torn length is
// caught as well as torn data.
func recordCRC(rec []byte) uint32 {
	c := crc32.Update(0, castagnoli, rec[:4])
	return crc32.Update(c, castagnoli, rec[frameHeaderSize:])
}

// frameLen returns the total framed size announced by a record header, or
// 0 if the header cannot start a record (zeros of a preallocated tail, or
// a length out of range).
func frameLen(hdr []byte) int {
	n := binary.LittleEndian.Uint32(hdr)
	if n < recordFixedSize || n > maxRecordSize {
		return 0
	}
	return frameHeaderSize + int(n)
}

// checkRecord verifies a whole framed record.
func checkRecord(rec []byte) error {
	if len(rec) < recordHeaderSize || frameLen(rec) != len(rec) {
		return fmt.Errorf("%w: bad length", ErrCorrupt)
	}
	if binary.LittleEndian.Uint32(rec[4:]) != recordCRC(rec) {
		return fmt.Errorf("%w: crc mismatch", ErrCorrupt)
	}
	if rec[33] != recordVersion {
		return fmt.Errorf("%w: unknown record version %d", ErrCorrupt, rec[33])
	}
	if extLen := binary.LittleEndian.Uint32(rec[34:]); int(extLen) > len(rec)-recordHeaderSize {
		return fmt.Errorf("%w: extensions length %d overruns record", ErrCorrupt, extLen)
	}
	return nil
}

// recordIndex returns the raft index of a checked record.
func recordIndex(rec []byte) uint64 { return binary.LittleEndian.Uint64(rec[8:]) }

// decodeRecord fills l from a checked record. Data and Extensions alias
// rec, which the caller hands over.
func decodeRecord(rec []byte, l *raft.Log) {
	l.Index = binary.LittleEndian.Uint64(rec[8:])
	l.Term = binary.LittleEndian.Uint64(rec[16:])
	if at := int64(binary.LittleEndian.Uint64(rec[24:])); at == zeroTime {
		l.AppendedAt = time.Time{}
	} else {
		l.AppendedAt = time.Unix(0, at)
	}
	l.Type = raft.LogType(rec[32])
	extLen := int(binary.LittleEndian.Uint32(rec[34:]))
	l.Extensions = nil
	if extLen > 0 {
		l.Extensions = rec[recordHeaderSize : recordHeaderSize+extLen : recordHeaderSize+extLen]
	}
	l.Data = nil
	if len(rec) > recordHeaderSize+extLen {
		l.Data = rec[recordHeaderSize+extLen:]
	}
}

// dataOffset is where l.Data starts inside l's framed record.
func dataOffset(l *raft.Log) int { return recordHeaderSize + len(l.Extensions) }

// entry is one entry index record: where a raft entry's record is and
// which logical commit offsets its messages cover.
type entry struct {
	pos      int64  // record position in its segment
	length   uint32 // framed record size
	msgOff   uint32 // first message byte, from the record start
	msgLen   uint32 // message bytes; 0 for entries without messages
	commitOf int64  // commit offset of the first message byte, or the running end
}

func (e entry) end() int64 { return e.commitOf + int64(e.msgLen) }

func appendEntry(buf []byte, e entry) []byte {
	start := len(buf)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(e.pos))
	buf = binary.LittleEndian.AppendUint32(buf, e.length)
	buf = binary.LittleEndian.AppendUint32(buf, e.msgOff)
	buf = binary.LittleEndian.AppendUint32(buf, e.msgLen)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(e.commitOf))
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf[start:], castagnoli))
}

func decodeEntry(b []byte) (entry, error) {
	if crc32.Checksum(b[:28], castagnoli) != binary.LittleEndian.Uint32(b[28:]) {
		return entry{}, fmt.Errorf("%w: entry index record crc mismatch", ErrCorrupt)
	}
	return entry{
		pos:      int64(binary.LittleEndian.Uint64(b)),
		length:   binary.LittleEndian.Uint32(b[8:]),
		msgOff:   binary.LittleEndian.Uint32(b[12:]),
		msgLen:   binary.LittleEndian.Uint32(b[16:]),
		commitOf: int64(binary.LittleEndian.Uint64(b[20:])),
	}, nil
}

// checkpoint names the last point known durable: everything in segments
// before segBase, and segment segBase up to pos (entries up to index), was
// fsynced together with its entry index.
type checkpoint struct {
	segBase uint64 // 0: the log was empty
	index   uint64 // last synced raft index; segBase-1 when none in segBase
	pos     int64
	endCO   int64 // commit offset end after index
}

func encodeCheckpoint(c checkpoint) []byte {
	b := make([]byte, 0, checkpointSize)
	b = binary.LittleEndian.AppendUint32(b, checkpointMagic)
	b = binary.LittleEndian.AppendUint32(b, checkpointVersion)
	b = binary.LittleEndian.AppendUint64(b, c.segBase)
	b = binary.LittleEndian.AppendUint64(b, c.index)
	b = binary.LittleEndian.AppendUint64(b, uint64(c.pos))
	b = binary.LittleEndian.AppendUint64(b, uint64(c.endCO))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeCheckpoint(b []byte) (checkpoint, error) {
	if len(b) != checkpointSize ||
		binary.LittleEndian.Uint32(b) != checkpointMagic ||
		binary.LittleEndian.Uint32(b[4:]) != checkpointVersion ||
		crc32.Checksum(b[:40], castagnoli) != binary.LittleEndian.Uint32(b[40:]) {
		return checkpoint{}, fmt.Errorf("%w: checkpoint", ErrCorrupt)
	}
	return checkpoint{
		segBase: binary.LittleEndian.Uint64(b[8:]),
		index:   binary.LittleEndian.Uint64(b[16:]),
		pos:     int64(binary.LittleEndian.Uint64(b[24:])),
		endCO:   int64(binary.LittleEndian.Uint64(b[32:])),
	}, nil
}
