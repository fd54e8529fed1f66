package message

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"net/netip"
	"slices"
)

// MessageExt is a message as stored in the commitlog and returned by pulls:
// the producer's Message plus what the broker assigned to it.
type MessageExt struct {
	Message
	QueueID                   int32
	StoreSize                 int32 // TOTALSIZE; set by decoding, ignored by AppendExt
	QueueOffset               int64
	SysFlag                   int32
	BornTimestamp             int64 // ms since the Unix epoch
	BornHost                  netip.AddrPort
	StoreTimestamp            int64 // ms since the Unix epoch
	StoreHost                 netip.AddrPort
	CommitLogOffset           int64
	BodyCRC                   uint32 // set by decoding, computed by AppendExt
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
}

// MsgID returns the offsetMsgId that locates the message: its store host
// and commit offset.
func (m *MessageExt) MsgID() string {
	return EncodeOffsetMsgID(m.StoreHost, m.CommitLogOffset)
}

// BodyCRC32 returns the checksum RocketMQ stores in BODYCRC: CRC-32 (IEEE)
// of the stored, possibly compressed, body with the top bit cleared, because
// the Java code keeps it in a non-negative int.
func BodyCRC32(body []byte) uint32 {
	return crc32.ChecksumIEEE(body) & 0x7fffffff
}

// hostFlags returns sysFlag with the IPv6 bits set from the address
// families, so the flags can never disagree with the bytes written.
func hostFlags(sysFlag int32, born, store netip.AddrPort) int32 {
	sysFlag &^= SysFlagBornHostV6 | SysFlagStoreHostV6
	if isV6(born.Addr()) {
		sysFlag |= SysFlagBornHostV6
	}
	if isV6(store.Addr()) {
		sysFlag |= SysFlagStoreHostV6
	}
	return sysFlag
}

// isV6 reports whether a needs the 16-byte host form. An invalid (zero)
// address is written as 0.0.0.0.
func isV6(a netip.Addr) bool { return a.IsValid() && !a.Is4() }

func extSize(sysFlag int32, bodyLen, topicLen, propLen int) int {
	return fixedExtSize - 2*hostV4Len +
		hostLen(sysFlag, SysFlagBornHostV6) + hostLen(sysFlag, SysFlagStoreHostV6) +
		bodyLen + topicLen + propLen
}

// EncodedSize returns the number of bytes AppendExt writes for m. It does
// not validate m.
func EncodedSize(m *MessageExt) int {
	sysFlag := hostFlags(m.SysFlag, m.BornHost, m.StoreHost)
	return extSize(sysFlag, len(m.Body), len(m.Topic), PropertiesLen(m.Properties))
}

func checkTopic(topic string) error {
	if topic == "" || len(topic) > MaxTopicLen {
		return fmt.Errorf("%w: %d bytes, want 1..%d", ErrBadTopic, len(topic), MaxTopicLen)
	}
	return nil
}

func checkProperties(props map[string]string) (int, error) {
	if err := ValidateProperties(props); err != nil {
		return 0, err
	}
	n := PropertiesLen(props)
	if n > MaxPropertiesLen {
		return 0, fmt.Errorf("%w: %d bytes, max %d", ErrPropertiesTooLong, n, MaxPropertiesLen)
	}
	return n, nil
}

// AppendExt appends m in the stored layout to dst. It computes TOTALSIZE and
// BODYCRC and sets the IPv6 bits of SYSFLAG from the host families, ignoring
// m.StoreSize, m.BodyCRC and m.SysFlag's host bits; m is not modified. The
// body is written as is: a caller that sets SysFlagCompressed passes the
// compressed body, as the broker receives it from the producer.
func AppendExt(dst []byte, m *MessageExt) ([]byte, error) {
	propLen, err := checkProperties(m.Properties)
	if err != nil {
		return dst, err
	}
	dst, err = appendExtHead(dst, m, propLen)
	if err != nil {
		return dst, err
	}
	return AppendProperties(dst, m.Properties), nil
}

// appendExtHead appends everything of m's record up to its properties:
// the fixed fields, body, topic and PROPERTIESLENGTH propLen.
func appendExtHead(dst []byte, m *MessageExt, propLen int) ([]byte, error) {
	if err := checkTopic(m.Topic); err != nil {
		return dst, err
	}
	sysFlag := hostFlags(m.SysFlag, m.BornHost, m.StoreHost)
	size := extSize(sysFlag, len(m.Body), len(m.Topic), propLen)
	if size > math.MaxInt32 {
		return dst, fmt.Errorf("%w: record of %d bytes", ErrBodyTooLarge, size)
	}
	dst = slices.Grow(dst, size)
	dst = appendFixed(dst, m, sysFlag, size)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(m.Body)))
	dst = append(dst, m.Body...)
	dst = append(dst, byte(len(m.Topic)))
	dst = append(dst, m.Topic...)
	return binary.BigEndian.AppendUint16(dst, uint16(propLen)), nil
}

// appendFixed writes TOTALSIZE through PREPAREDTXOFFSET.
func appendFixed(dst []byte, m *MessageExt, sysFlag int32, size int) []byte {
	be := binary.BigEndian
	dst = be.AppendUint32(dst, uint32(size))
	dst = be.AppendUint32(dst, MagicCode)
	dst = be.AppendUint32(dst, BodyCRC32(m.Body))
	dst = be.AppendUint32(dst, uint32(m.QueueID))
	dst = be.AppendUint32(dst, uint32(m.Flag))
	dst = be.AppendUint64(dst, uint64(m.QueueOffset))
	dst = be.AppendUint64(dst, uint64(m.CommitLogOffset))
	dst = be.AppendUint32(dst, uint32(sysFlag))
	dst = be.AppendUint64(dst, uint64(m.BornTimestamp))
	dst = appendHost(dst, m.BornHost)
	dst = be.AppendUint64(dst, uint64(m.StoreTimestamp))
	dst = appendHost(dst, m.StoreHost)
	dst = be.AppendUint32(dst, uint32(m.ReconsumeTimes))
	return be.AppendUint64(dst, uint64(m.PreparedTransactionOffset))
}

// appendHost writes the address (4 or 16 bytes) and the port as an int32.
func appendHost(dst []byte, ap netip.AddrPort) []byte {
	a := ap.Addr()
	if isV6(a) {
		b := a.As16()
		dst = append(dst, b[:]...)
	} else {
		var b [4]byte
		if a.IsValid() {
			b = a.As4()
		}
		dst = append(dst, b[:]...)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(ap.Port()))
}

// readHost reads a host written by appendHost; b must be long enough.
func readHost(b []byte, v6 bool) (netip.AddrPort, error) {
	var a netip.Addr
	n := 4
	if v6 {
		a, n = netip.AddrFrom16([16]byte(b[:16])), 16
	} else {
		a = netip.AddrFrom4([4]byte(b[:4]))
	}
	port := binary.BigEndian.Uint32(b[n:])
	if port > math.MaxUint16 {
		return netip.AddrPort{}, fmt.Errorf("%w: port %d", ErrBadHost, port)
	}
	return netip.AddrPortFrom(a, uint16(port)), nil
}
