package message

import (
	"errors"
	"net/netip"
	"testing"
	"time"
)

func TestOffsetMsgID(t *testing.T) {
	tests := []struct {
		host string
		off  int64
		want string
	}{
		{"192.168.1.2:10911", 4096, "C0A8010200002A9F0000000000001000"},
		{"127.0.0.1:0", 0, "7F000001000000000000000000000000"},
		{"10.0.0.1:65535", -1, "0A0000010000FFFFFFFFFFFFFFFFFFFF"},
		{"[2001:db8::1]:10911", 0x0102030405060708, "20010DB800000000000000000000000100002A9F0102030405060708"},
	}
	for _, tt := range tests {
		ap := netip.MustParseAddrPort(tt.host)
		got := EncodeOffsetMsgID(ap, tt.off)
		if got != tt.want {
			t.Errorf("EncodeOffsetMsgID(%s, %d) = %s, want %s", tt.host, tt.off, got, tt.want)
		}
		gotHost, gotOff, err := DecodeOffsetMsgID(got)
		if err != nil || gotHost != ap || gotOff != tt.off {
			t.Errorf("DecodeOffsetMsgID(%s) = %s, %d, %v; want %s, %d", got, gotHost, gotOff, err, ap, tt.off)
		}
	}
	if got := EncodeOffsetMsgID(netip.AddrPort{}, 1); got != "00000000000000000000000000000001" {
		t.Errorf("zero host: %s", got)
	}
}

func TestDecodeOffsetMsgIDLowercase(t *testing.T) {
	host, off, err := DecodeOffsetMsgID("c0a8010200002a9f0000000000001000")
	if err != nil || host != netip.MustParseAddrPort("192.168.1.2:10911") || off != 4096 {
		t.Errorf("got %s, %d, %v", host, off, err)
	}
}

func TestDecodeOffsetMsgIDErrors(t *testing.T) {
	for _, s := range []string{
		"",
		"C0A8010200002A9F000000000000100",   // 31
		"C0A8010200002A9F00000000000010000", // 33
		"G0A8010200002A9F0000000000001000",  // not hex
		"C0A8010200012A9F0000000000001000",  // port 0x12A9F > 65535
		"AC11000100002A9F000000000000100 ",  // space
	} {
		if _, _, err := DecodeOffsetMsgID(s); !errors.Is(err, ErrBadMsgID) {
			t.Errorf("DecodeOffsetMsgID(%q) err = %v, want ErrBadMsgID", s, err)
		}
	}
}

func TestUniqKeyLayout(t *testing.T) {
	loc := time.FixedZone("X", 8*3600)
	now := time.Date(2026, 12, 2, 13, 0, 0, 5e6, loc)
	g := NewUniqKeyGenerator(netip.MustParseAddr("10.1.2.3"), 0x12345)
	g.now = func() time.Time { return now }
	k1, k2 := g.Next(), g.Next()
	if len(k1) != UniqKeyLenV4 {
		t.Fatalf("len(%s) = %d, want %d", k1, len(k1), UniqKeyLenV4)
	}
	// ip 0A010203 · pid low 16 bits 2345 · 8 random hex · span · counter
	span := now.Sub(time.Date(2026, 12, 1, 0, 0, 0, 0, loc)).Milliseconds()
	if k1[:12] != "0A0102032345" {
		t.Errorf("prefix %s, want 0A0102032345", k1[:12])
	}
	wantTail := func(counter int) string {
		var l lay
		l.u32(uint32(span)).u16(uint16(counter))
		return hexUpper(l.b)
	}
	if k1[20:] != wantTail(0) || k2[20:] != wantTail(1) {
		t.Errorf("tails %s %s, want %s %s", k1[20:], k2[20:], wantTail(0), wantTail(1))
	}
	if k1[:20] != k2[:20] {
		t.Errorf("prefix changed between keys: %s %s", k1, k2)
	}
	ip, at, err := ParseUniqKeyAt(k1, now.Add(time.Hour))
	if err != nil || ip != netip.MustParseAddr("10.1.2.3") || !at.Equal(now) {
		t.Errorf("ParseUniqKeyAt = %s, %s, %v; want 10.1.2.3, %s", ip, at, err, now)
	}
}

func hexUpper(b []byte) string {
	const digits = "0123456789ABCDEF"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestUniqKeyMonthRollover(t *testing.T) {
	loc := time.UTC
	created := time.Date(2026, 11, 30, 23, 59, 59, 0, loc)
	g := NewUniqKeyGenerator(netip.MustParseAddr("::1"), 7)
	g.now = func() time.Time { return created }
	k := g.Next()
	if len(k) != UniqKeyLenV6 {
		t.Fatalf("IPv6 key %s has length %d, want %d", k, len(k), UniqKeyLenV6)
	}
	// Parsed early in the next month, the span only fits the previous one.
	ip, at, err := ParseUniqKeyAt(k, time.Date(2026, 12, 1, 0, 0, 1, 0, loc))
	if err != nil || ip != netip.MustParseAddr("::1") || !at.Equal(created) {
		t.Errorf("ParseUniqKeyAt = %s, %s, %v; want ::1, %s", ip, at, err, created)
	}
	// The generator starts a new month when the clock crosses into it.
	next := time.Date(2026, 12, 1, 0, 0, 0, 3e6, loc)
	g.now = func() time.Time { return next }
	if tail := g.Next()[UniqKeyLenV6-12:]; tail[:8] != "00000003" {
		t.Errorf("span after rollover = %s, want 00000003", tail[:8])
	}
}

func TestUniqKeyDistinct(t *testing.T) {
	g := NewUniqKeyGenerator(netip.MustParseAddr("10.0.0.1"), 1)
	seen := make(map[string]bool)
	for range 10000 {
		k := g.Next()
		if seen[k] {
			t.Fatalf("duplicate key %s", k)
		}
		seen[k] = true
	}
}

func TestParseUniqKeyErrors(t *testing.T) {
	for _, s := range []string{"", "0A01020323450000000000000000000", "ZA010203234500000000000000000000"} {
		if _, _, err := ParseUniqKey(s); !errors.Is(err, ErrBadUniqKey) {
			t.Errorf("ParseUniqKey(%q) err = %v, want ErrBadUniqKey", s, err)
		}
	}
}
