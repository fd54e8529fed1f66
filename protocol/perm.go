package protocol

import "strings"

// Permission bits of a topic or a broker, as RocketMQ's PermName. Frozen:
// they are on the wire.
const (
	PermInherit = 1
	PermWrite   = 2
	PermRead    = 4
	// PermReadWrite is what a topic gets by default.
	PermReadWrite = PermRead | PermWrite
	// PermAll is every bit that has a meaning.
	PermAll = PermRead | PermWrite | PermInherit
)

// Readable reports whether perm allows reading.
func Readable(perm int32) bool { return perm&PermRead != 0 }

// Writable reports whether perm allows writing.
func Writable(perm int32) bool { return perm&PermWrite != 0 }

// Inheritable reports whether new topics may be created from a topic with
// perm (auto-creation through a default topic).
func Inheritable(perm int32) bool { return perm&PermInherit != 0 }

// ValidPerm reports whether perm is a combination of the known bits.
func ValidPerm(perm int32) bool { return perm >= 0 && perm <= PermAll }

// PermString formats perm as RocketMQ's PermName.perm2String: "RWX" with
// '-' for a missing bit (X is inherit).
func PermString(perm int32) string {
	var sb strings.Builder
	for _, p := range []struct {
		bit  int32
		char byte
	}{{PermRead, 'R'}, {PermWrite, 'W'}, {PermInherit, 'X'}} {
		if perm&p.bit != 0 {
			sb.WriteByte(p.char)
		} else {
			sb.WriteByte('-')
		}
	}
	return sb.String()
}
