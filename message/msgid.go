package message

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
)

// Lengths of an offsetMsgId in hex characters. Frozen.
const (
	OffsetMsgIDLenV4 = 2 * (4 + 4 + 8)  // IPv4 address, port, commit offset
	OffsetMsgIDLenV6 = 2 * (16 + 4 + 8) // IPv6 address, port, commit offset
)

// EncodeOffsetMsgID returns the offsetMsgId of the message stored at
// commitOffset on storeHost: uppercase hex of the address (4 or 16 bytes),
// the port as 4 bytes and the offset as 8, all big-endian. An invalid
// address encodes as 0.0.0.0, as in the stored layout.
func EncodeOffsetMsgID(storeHost netip.AddrPort, commitOffset int64) string {
	b := appendHost(make([]byte, 0, 28), storeHost)
	b = binary.BigEndian.AppendUint64(b, uint64(commitOffset))
	return strings.ToUpper(hex.EncodeToString(b))
}

// DecodeOffsetMsgID parses an offsetMsgId of either length, in either case.
func DecodeOffsetMsgID(s string) (netip.AddrPort, int64, error) {
	if len(s) != OffsetMsgIDLenV4 && len(s) != OffsetMsgIDLenV6 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %d characters, want %d or %d",
			ErrBadMsgID, len(s), OffsetMsgIDLenV4, OffsetMsgIDLenV6)
	}
	var buf [28]byte
	b := buf[:len(s)/2]
	if _, err := hex.Decode(b, []byte(s)); err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %w", ErrBadMsgID, err)
	}
	host, err := readHost(b, len(s) == OffsetMsgIDLenV6)
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %w", ErrBadMsgID, err)
	}
	off := int64(binary.BigEndian.Uint64(b[len(b)-8:]))
	return host, off, nil
}
