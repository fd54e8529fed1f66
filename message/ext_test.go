package message

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func sampleExt() *MessageExt {
	return &MessageExt{
		Message: Message{
			Topic:      "T1",
			Flag:       7,
			Properties: map[string]string{PropertyTags: "TagA"},
			Body:       []byte("x"),
		},
		QueueID:                   3,
		QueueOffset:               42,
		SysFlag:                   SysFlagMultiTags,
		BornTimestamp:             1700000000000,
		BornHost:                  netip.MustParseAddrPort("10.0.0.1:54321"),
		StoreTimestamp:            1700000000123,
		StoreHost:                 netip.MustParseAddrPort("192.168.1.2:10911"),
		CommitLogOffset:           4096,
		ReconsumeTimes:            1,
		PreparedTransactionOffset: -1,
	}
}

// sampleExtBytes lays out sampleExt by hand, in the order the Go client's
// DecodeMessage (primitive/message.go) reads the fields.
func sampleExtBytes() []byte {
	var l lay
	l.u32(104)                        // TOTALSIZE: 91 fixed + 1 body + 2 topic + 10 props
	l.u32(0xdaa320a7)                 // MAGICCODE
	l.u32(0x0cdc1683)                 // BODYCRC: crc32("x") = 0x8cdc1683, top bit cleared
	l.u32(3)                          // QUEUEID
	l.u32(7)                          // FLAG
	l.u64(42)                         // QUEUEOFFSET
	l.u64(4096)                       // PHYSICALOFFSET
	l.u32(2)                          // SYSFLAG: multi-tags, IPv4 hosts
	l.u64(1700000000000)              // BORNTIMESTAMP
	l.raw(10, 0, 0, 1).u32(54321)     // BORNHOST
	l.u64(1700000000123)              // STORETIMESTAMP
	l.raw(192, 168, 1, 2).u32(10911)  // STOREHOST
	l.u32(1)                          // RECONSUMETIMES
	l.u64(0xffffffffffffffff)         // PREPAREDTXOFFSET -1
	l.u32(1).str("x")                 // BODY
	l.u8(2).str("T1")                 // TOPIC
	l.u16(10).str("TAGS\x01TagA\x02") // PROPS
	return l.b
}

// decoded returns what decoding m's encoding gives back: the fields the
// encoder computes filled in.
func decoded(m *MessageExt, size int) *MessageExt {
	c := *m
	c.StoreSize = int32(size)
	c.BodyCRC = BodyCRC32(m.Body)
	c.SysFlag = hostFlags(m.SysFlag, m.BornHost, m.StoreHost)
	return &c
}

func TestExtFixtureIPv4(t *testing.T) {
	want := sampleExtBytes()
	m := sampleExt()
	got, err := AppendExt(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendExt =\n% x\nwant\n% x", got, want)
	}
	if n := EncodedSize(m); n != len(want) {
		t.Errorf("EncodedSize = %d, want %d", n, len(want))
	}
	dm, n, err := DecodeExtOpts{VerifyCRC: true}.DecodeExt(want)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Errorf("consumed %d, want %d", n, len(want))
	}
	if w := decoded(m, len(want)); !reflect.DeepEqual(dm, w) {
		t.Errorf("DecodeExt = %+v\nwant %+v", dm, w)
	}
	if got, want := dm.MsgID(), "C0A8010200002A9F0000000000001000"; got != want {
		t.Errorf("MsgID = %s, want %s", got, want)
	}
}

func TestExtFixtureIPv6(t *testing.T) {
	m := sampleExt()
	m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:5000")
	m.StoreHost = netip.MustParseAddrPort("[::ffff:192.168.1.2]:10911") // mapped stays 16 bytes
	m.Properties = nil
	var l lay
	l.u32(91 + 12 + 12 + 1 + 2)
	l.u32(0xdaa320a7).u32(0x0cdc1683).u32(3).u32(7).u64(42).u64(4096)
	l.u32(0x32) // multi-tags | born v6 | store v6
	l.u64(1700000000000)
	l.raw(0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1).u32(5000)
	l.u64(1700000000123)
	l.raw(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 2).u32(10911)
	l.u32(1).u64(0xffffffffffffffff)
	l.u32(1).str("x").u8(2).str("T1").u16(0)
	want := l.b

	got, err := AppendExt(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendExt =\n% x\nwant\n% x", got, want)
	}
	dm, _, err := DecodeExt(got)
	if err != nil {
		t.Fatal(err)
	}
	if w := decoded(m, len(want)); !reflect.DeepEqual(dm, w) {
		t.Errorf("DecodeExt = %+v\nwant %+v", dm, w)
	}
	if got := dm.MsgID(); len(got) != OffsetMsgIDLenV6 || !strings.HasPrefix(got, "00000000000000000000FFFFC0A80102") {
		t.Errorf("MsgID = %s, want 56 chars starting with the mapped address", got)
	}
}

func TestExtRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789"), 1000)
	tests := []struct {
		name   string
		mutate func(*MessageExt)
	}{
		{"sample", func(*MessageExt) {}},
		{"empty body", func(m *MessageExt) { m.Body = nil }},
		{"no properties", func(m *MessageExt) { m.Properties = nil }},
		{"max topic", func(m *MessageExt) { m.Topic = strings.Repeat("t", MaxTopicLen) }},
		{"big body", func(m *MessageExt) { m.Body = big }},
		{"zero hosts", func(m *MessageExt) {
			m.BornHost = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
			m.StoreHost = m.BornHost
		}},
		{"v6 store only", func(m *MessageExt) { m.StoreHost = netip.MustParseAddrPort("[fe80::1]:1") }},
		{"prepared", func(m *MessageExt) { m.SysFlag = SysFlagTransactionPrepared }},
		{"stale v6 bits cleared", func(m *MessageExt) { m.SysFlag = SysFlagBornHostV6 | SysFlagStoreHostV6 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sampleExt()
			tt.mutate(m)
			b, err := AppendExt([]byte("prefix"), m)
			if err != nil {
				t.Fatal(err)
			}
			if string(b[:6]) != "prefix" {
				t.Fatalf("AppendExt clobbered dst prefix")
			}
			b = b[6:]
			if len(b) != EncodedSize(m) {
				t.Errorf("len = %d, EncodedSize = %d", len(b), EncodedSize(m))
			}
			got, n, err := DecodeExtOpts{VerifyCRC: true}.DecodeExt(b)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(b) {
				t.Errorf("consumed %d of %d", n, len(b))
			}
			if want := decoded(m, len(b)); !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestExtCompressedBody(t *testing.T) {
	plain := bytes.Repeat([]byte("compress me "), 1000)
	z, err := Compress(plain, DefaultCompressLevel)
	if err != nil {
		t.Fatal(err)
	}
	m := sampleExt()
	m.Body = z
	m.SysFlag |= SysFlagCompressed
	b, err := AppendExt(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	raw, _, err := DecodeExt(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw.Body, z) || raw.SysFlag&SysFlagCompressed == 0 {
		t.Errorf("without Decompress: body changed or flag lost (flag %#x)", raw.SysFlag)
	}
	if raw.BodyCRC != BodyCRC32(z) {
		t.Errorf("BODYCRC %#x, want crc of the compressed body %#x", raw.BodyCRC, BodyCRC32(z))
	}
	inflated, _, err := DecodeExtOpts{VerifyCRC: true, Decompress: true}.DecodeExt(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(inflated.Body, plain) {
		t.Errorf("Decompress: body of %d bytes, want %d", len(inflated.Body), len(plain))
	}
	if inflated.SysFlag&SysFlagCompressed != 0 {
		t.Errorf("Decompress left SysFlagCompressed set: %#x", inflated.SysFlag)
	}
	_, _, err = DecodeExtOpts{Decompress: true, MaxBodySize: len(plain) - 1}.DecodeExt(b)
	if !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("MaxBodySize below body: err = %v, want ErrBodyTooLarge", err)
	}
}

func TestAppendExtErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*MessageExt)
		want   error
	}{
		{"empty topic", func(m *MessageExt) { m.Topic = "" }, ErrBadTopic},
		{"topic 128", func(m *MessageExt) { m.Topic = strings.Repeat("t", 128) }, ErrBadTopic},
		{"bad property", func(m *MessageExt) { m.Properties = map[string]string{"a": "\x02"} }, ErrBadProperty},
		{"props too long", func(m *MessageExt) { m.Properties = map[string]string{"k": strings.Repeat("v", 40000)} }, ErrPropertiesTooLong},
	}
	for _, tt := range tests {
		m := sampleExt()
		tt.mutate(m)
		dst := []byte("keep")
		got, err := AppendExt(dst, m)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
		if string(got) != "keep" {
			t.Errorf("%s: dst = %q after error, want unchanged", tt.name, got)
		}
	}
}

// mutated returns the sample record with fn applied to a copy.
func mutated(fn func(b []byte) []byte) []byte {
	return fn(append([]byte(nil), sampleExtBytes()...))
}

func TestDecodeExtErrors(t *testing.T) {
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte {
			b[off], b[off+1], b[off+2], b[off+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
			return b
		}
	}
	const bodyLenOff = 84
	topicLenOff := bodyLenOff + 4 + 1
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"3 bytes", []byte{0, 0, 0}, ErrTruncated},
		{"total below min", mutated(put32(0, 90)), ErrCorrupt},
		{"total negative", mutated(put32(0, 0x80000000)), ErrCorrupt},
		{"total max int32", mutated(put32(0, 0x7fffffff)), ErrTruncated},
		{"cut short", sampleExtBytes()[:103], ErrTruncated},
		{"bad magic", mutated(put32(4, 0xdaa320a8)), ErrBadMagic},
		{"v6 flags without room", mutated(func(b []byte) []byte { b[39] |= 0x30; return b }), ErrCorrupt},
		{"born port too big", mutated(put32(52, 65536)), ErrBadHost},
		{"store port negative", mutated(put32(68, 0xffffffff)), ErrBadHost},
		{"body len negative", mutated(put32(bodyLenOff, 0xffffffff)), ErrCorrupt},
		{"body len max", mutated(put32(bodyLenOff, 0x7fffffff)), ErrCorrupt},
		{"body len past end", mutated(put32(bodyLenOff, 13)), ErrCorrupt},
		{"topic len 0", mutated(func(b []byte) []byte { b[topicLenOff] = 0; return b }), ErrCorrupt},
		{"topic len 200", mutated(func(b []byte) []byte { b[topicLenOff] = 200; return b }), ErrCorrupt},
		{"prop len short", mutated(func(b []byte) []byte { b[topicLenOff+4] = 9; return b }), ErrCorrupt},
		{"prop len 0xffff", mutated(func(b []byte) []byte { b[topicLenOff+3], b[topicLenOff+4] = 0xff, 0xff; return b }), ErrCorrupt},
		{"bad props", mutated(func(b []byte) []byte { b[len(b)-6] = 'X'; return b }), ErrMalformedProperties},
	}
	for _, tt := range tests {
		m, n, err := DecodeExt(tt.in)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
		if m != nil || n != 0 {
			t.Errorf("%s: got message %v, n %d with error", tt.name, m != nil, n)
		}
	}
}

func TestDecodeExtCRCMismatch(t *testing.T) {
	b := sampleExtBytes()
	b[88] = 'y' // the body byte
	if _, _, err := DecodeExt(b); err != nil {
		t.Fatalf("without VerifyCRC: %v", err)
	}
	if _, _, err := (DecodeExtOpts{VerifyCRC: true}).DecodeExt(b); !errors.Is(err, ErrCRCMismatch) {
		t.Errorf("with VerifyCRC: err = %v, want ErrCRCMismatch", err)
	}
}

func TestDecodeExts(t *testing.T) {
	var body []byte
	var want []*MessageExt
	for i := range 3 {
		m := sampleExt()
		m.QueueOffset = int64(i)
		m.Body = bytes.Repeat([]byte{byte('a' + i)}, i*7+1)
		var err error
		start := len(body)
		if body, err = AppendExt(body, m); err != nil {
			t.Fatal(err)
		}
		want = append(want, decoded(m, len(body)-start))
	}
	got, err := DecodeExts(body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeExts mismatch:\ngot  %+v\nwant %+v", got, want)
	}
	if got, err := DecodeExts(nil); err != nil || len(got) != 0 {
		t.Errorf("DecodeExts(nil) = %v, %v; want empty, nil", got, err)
	}
	if _, err := DecodeExts(body[:len(body)-1]); !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated last record: err = %v, want ErrTruncated", err)
	}
}

func TestDecodeExtDoesNotAlias(t *testing.T) {
	b := sampleExtBytes()
	m, _, err := DecodeExt(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0
	}
	if string(m.Body) != "x" || m.Topic != "T1" || m.Tags() != "TagA" {
		t.Errorf("decoded message changed with its input: %+v", m)
	}
}

// TestDecodeExtsBodiesIndependent: the messages of one pull share a body
// buffer, but not the input, and growing one body cannot overwrite the
// next; decoded property keys and the shared topic compare equal.
func TestDecodeExtsBodiesIndependent(t *testing.T) {
	var b []byte
	for i := range 3 {
		m := sampleExt()
		m.Body = bytes.Repeat([]byte{byte('a' + i)}, 5)
		m.Properties[PropertyKeys] = "k" + string(rune('0'+i))
		var err error
		if b, err = AppendExt(b, m); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := DecodeExts(b)
	if err != nil || len(msgs) != 3 {
		t.Fatal(len(msgs), err)
	}
	clear(b)
	msgs[0].Body = append(msgs[0].Body, "zzzz"...)
	for i, m := range msgs[1:] {
		if want := bytes.Repeat([]byte{byte('b' + i)}, 5); !bytes.Equal(m.Body, want) {
			t.Errorf("message %d body %q, want %q", i+1, m.Body, want)
		}
	}
	for i, m := range msgs {
		if m.Topic != "T1" || m.Tags() != "TagA" || m.Property(PropertyKeys) != "k"+string(rune('0'+i)) {
			t.Errorf("message %d: topic %q tags %q keys %q", i, m.Topic, m.Tags(), m.Property(PropertyKeys))
		}
	}
}
