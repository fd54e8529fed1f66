package message

import (
	"encoding/binary"
	"fmt"
)

// Frozen constants of the stored layout (RocketMQ 4.x, magic v1).
const (
	// MagicCode marks a stored message record. Java's int -626843481.
	MagicCode uint32 = 0xdaa320a7
	// MaxTopicLen is the longest topic: TOPICLEN is one signed byte.
	MaxTopicLen = 127
	// MinExtSize is the size of a record with IPv4 hosts, no body, a
	// one-byte topic and no properties.
	MinExtSize = fixedExtSize + 1

	// fixedExtSize counts every fixed-width field with IPv4 hosts.
	fixedExtSize = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + hostV4Len + 8 + hostV4Len + 4 + 8 + 4 + 1 + 2
	hostV4Len    = 4 + 4
	hostV6Len    = 16 + 4
)

// Offsets of the fields that precede the born host, fixed for every record.
const (
	offTotalSize      = 0
	offMagic          = 4
	offBodyCRC        = 8
	offQueueID        = 12
	offFlag           = 16
	offQueueOffset    = 20
	offCommitLogOff   = 28
	offSysFlag        = 36
	offBornTimestamp  = 40
	offBornHost       = 48
	bornHostAndBefore = offBornHost // the born host's length depends on sysFlag
)

// layout holds the offsets of the fields whose position depends on the
// host lengths chosen by sysFlag.
type layout struct {
	storeTimestamp int
	storeHost      int
	reconsumeTimes int
	preparedTxOff  int
	bodyLen        int // offset of BODYLEN; the body follows it
}

func hostLen(sysFlag, v6bit int32) int {
	if sysFlag&v6bit != 0 {
		return hostV6Len
	}
	return hostV4Len
}

func layoutFor(sysFlag int32) layout {
	var l layout
	l.storeTimestamp = bornHostAndBefore + hostLen(sysFlag, SysFlagBornHostV6)
	l.storeHost = l.storeTimestamp + 8
	l.reconsumeTimes = l.storeHost + hostLen(sysFlag, SysFlagStoreHostV6)
	l.preparedTxOff = l.reconsumeTimes + 4
	l.bodyLen = l.preparedTxOff + 8
	return l
}

// PeekTotalSize returns the TOTALSIZE of the record at the start of b
// without checking the rest, so a reader can tell how many bytes to fetch.
func PeekTotalSize(b []byte) (int, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("%w: %d bytes, need 4 for TOTALSIZE", ErrTruncated, len(b))
	}
	n := int32(binary.BigEndian.Uint32(b))
	if n < MinExtSize {
		return 0, fmt.Errorf("%w: TOTALSIZE %d below minimum %d", ErrCorrupt, n, MinExtSize)
	}
	return int(n), nil
}

// recordLayout checks that rec holds at least the fixed fields up to BODYLEN
// and returns their layout.
func recordLayout(rec []byte) (layout, int32, error) {
	if len(rec) < offSysFlag+4 {
		return layout{}, 0, fmt.Errorf("%w: %d bytes, need SYSFLAG", ErrTruncated, len(rec))
	}
	sysFlag := int32(binary.BigEndian.Uint32(rec[offSysFlag:]))
	l := layoutFor(sysFlag)
	if len(rec) < l.bodyLen+4 {
		return layout{}, 0, fmt.Errorf("%w: %d bytes, need %d for fixed fields", ErrTruncated, len(rec), l.bodyLen+4)
	}
	return l, sysFlag, nil
}
