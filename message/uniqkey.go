package message

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Lengths of a client unique key (UNIQ_KEY) in hex characters. Frozen.
//
//	ip 4|16 · pid 2 · loader 4 · ms since start of month 4 · counter 2
const (
	UniqKeyLenV4 = 2 * (4 + 2 + 4 + 4 + 2)
	UniqKeyLenV6 = 2 * (16 + 2 + 4 + 4 + 2)
)

// UniqKeyGenerator makes UNIQ_KEY values in the layout of the RocketMQ
// clients. It is safe for concurrent use.
type UniqKeyGenerator struct {
	prefix string // uppercase hex of ip · pid · loader

	mu         sync.Mutex
	now        func() time.Time // the clock; replaced in tests
	monthStart time.Time
	nextMonth  time.Time
	counter    uint16
}

// NewUniqKeyGenerator returns a generator for a producer on ip with process
// id pid. Java fills the 4 bytes after the pid with its class loader's hash
// and the Go client with 0; here they are random, so that two processes
// with the same address and pid (pid 1 in containers) differ.
func NewUniqKeyGenerator(ip netip.Addr, pid int) *UniqKeyGenerator {
	var b []byte
	if isV6(ip) {
		a := ip.As16()
		b = append(b, a[:]...)
	} else {
		var a [4]byte
		if ip.IsValid() {
			a = ip.As4()
		}
		b = append(b, a[:]...)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(pid))
	b = binary.BigEndian.AppendUint32(b, rand.Uint32())
	return &UniqKeyGenerator{
		prefix: strings.ToUpper(hex.EncodeToString(b)),
		now:    time.Now,
	}
}

// Next returns a new key. Keys of one generator are distinct for 65536
// calls within a millisecond.
func (g *UniqKeyGenerator) Next() string {
	g.mu.Lock()
	now := g.now()
	if !now.Before(g.nextMonth) {
		g.monthStart = startOfMonth(now)
		g.nextMonth = g.monthStart.AddDate(0, 1, 0)
	}
	// A month has up to 2.68e9 ms, more than an int32 holds: Java writes
	// the low 32 bits anyway, and readers take them as unsigned. A clock
	// stepped back across the month boundary gives 0, not a huge span.
	span := max(now.Sub(g.monthStart).Milliseconds(), 0)
	counter := g.counter
	g.counter++
	g.mu.Unlock()

	var b [6]byte
	binary.BigEndian.PutUint32(b[:], uint32(span))
	binary.BigEndian.PutUint16(b[4:], counter)
	return g.prefix + strings.ToUpper(hex.EncodeToString(b[:]))
}

func startOfMonth(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, t.Location())
}

// ParseUniqKey returns the producer address and the approximate creation
// time of a unique key, relative to the current local month.
func ParseUniqKey(s string) (netip.Addr, time.Time, error) {
	return ParseUniqKeyAt(s, time.Now())
}

// ParseUniqKeyAt is ParseUniqKey with an explicit "now". A key holds only
// milliseconds since the start of its month, in the producer's time zone:
// the month is taken to be now's (in now's location), or the previous one
// when that would put the key in the future, as the Java client does.
// Keys from other clients than RocketMQ's may decode to nonsense times.
func ParseUniqKeyAt(s string, now time.Time) (netip.Addr, time.Time, error) {
	if len(s) != UniqKeyLenV4 && len(s) != UniqKeyLenV6 {
		return netip.Addr{}, time.Time{}, fmt.Errorf("%w: %d characters, want %d or %d",
			ErrBadUniqKey, len(s), UniqKeyLenV4, UniqKeyLenV6)
	}
	var buf [28]byte
	b := buf[:len(s)/2]
	if _, err := hex.Decode(b, []byte(s)); err != nil {
		return netip.Addr{}, time.Time{}, fmt.Errorf("%w: %w", ErrBadUniqKey, err)
	}
	var ip netip.Addr
	n := 4
	if len(s) == UniqKeyLenV6 {
		ip, n = netip.AddrFrom16([16]byte(b[:16])), 16
	} else {
		ip = netip.AddrFrom4([4]byte(b[:4]))
	}
	// Unsigned: see Next. Java's parser reads it signed and misplaces keys
	// from after the 24th day of a month; this one does not.
	span := time.Duration(binary.BigEndian.Uint32(b[n+6:])) * time.Millisecond
	start := startOfMonth(now)
	if !start.Add(span).Before(now) {
		start = start.AddDate(0, -1, 0)
	}
	return ip, start.Add(span), nil
}
