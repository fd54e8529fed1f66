package message

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// extSeeds are records the fuzzer starts from: valid ones of each shape,
// truncations, and edge values in every length field.
func extSeeds(t testing.TB) [][]byte {
	v4 := sampleExtBytes()
	m := sampleExt()
	m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:5000")
	m.StoreHost = netip.MustParseAddrPort("[2001:db8::2]:10911")
	v6, err := AppendExt(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	z, _ := Compress([]byte("compressed body compressed body"), 5)
	m = sampleExt()
	m.Body, m.SysFlag = z, SysFlagCompressed
	zrec, err := AppendExt(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	seeds := [][]byte{nil, {0}, v4, v6, zrec, append(append([]byte(nil), v4...), v6...)}
	for _, n := range []int{1, 4, 36, 40, 90, 91, len(v4) - 1} {
		seeds = append(seeds, v4[:n])
	}
	for _, size := range []uint32{0, 1, MinExtSize, 0x7fffffff, 0x80000000, 0xffffffff} {
		seeds = append(seeds, withUint32(v4, 0, size))
	}
	for _, bodyLen := range []uint32{0, 1, 0x7fffffff, 0xffffffff} {
		seeds = append(seeds, withUint32(v4, 84, bodyLen))
	}
	return seeds
}

func withUint32(b []byte, off int, v uint32) []byte {
	c := append([]byte(nil), b...)
	binary.BigEndian.PutUint32(c[off:], v)
	return c
}

func FuzzDecodeExt(f *testing.F) {
	for _, s := range extSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// The inflating path must not panic either; its result is not
		// compared because re-encoding would store the inflated body.
		_, _, _ = DecodeExtOpts{VerifyCRC: true, Decompress: true, MaxBodySize: 1 << 20}.DecodeExt(b)
		m, n, err := DecodeExt(b)
		checkFuzzAccessors(t, b, m)
		if err != nil {
			if m != nil || n != 0 {
				t.Fatalf("error %v with message %v, n %d", err, m != nil, n)
			}
			return
		}
		if n < MinExtSize || n > len(b) || int(m.StoreSize) != n {
			t.Fatalf("consumed %d of %d, StoreSize %d", n, len(b), m.StoreSize)
		}
		enc, err := AppendExt(nil, m)
		if err != nil {
			t.Fatalf("decoded message does not re-encode: %v", err)
		}
		// Duplicate keys and empty property items shrink on re-encoding; a
		// missing final separator, which decoding tolerates, adds one byte.
		if len(enc) > n+1 || len(enc) != EncodedSize(m) {
			t.Fatalf("re-encoded to %d bytes from %d, EncodedSize %d", len(enc), n, EncodedSize(m))
		}
		m2, n2, err := DecodeExtOpts{VerifyCRC: true}.DecodeExt(enc)
		if err != nil || n2 != len(enc) {
			t.Fatalf("re-encoded record: n %d, %v", n2, err)
		}
		m.BodyCRC, m.StoreSize = BodyCRC32(m.Body), int32(len(enc))
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip:\n%+v\n%+v", m, m2)
		}
	})
}

func FuzzDecodeExts(f *testing.F) {
	for _, s := range extSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := DecodeExts(b)
		if err != nil {
			return
		}
		total := 0
		for _, m := range msgs {
			total += int(m.StoreSize)
		}
		if total != len(b) {
			t.Fatalf("records cover %d of %d bytes", total, len(b))
		}
	})
}

func FuzzDecodeBatch(f *testing.F) {
	valid, _ := EncodeBatch([]*Message{
		{Body: []byte("hello"), Properties: map[string]string{"TAGS": "TagA"}},
		{Flag: 3},
	})
	f.Add(valid)
	f.Add([]byte{})
	for _, n := range []int{1, 4, 21, 22, len(valid) - 1} {
		f.Add(valid[:n])
	}
	for _, v := range []uint32{0, 1, 22, 0x7fffffff, 0xffffffff} {
		f.Add(withUint32(valid, 0, v))
		f.Add(withUint32(valid, 16, v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := DecodeBatch(b, "T")
		if err != nil {
			return
		}
		enc, err := EncodeBatch(msgs)
		if err != nil {
			t.Fatalf("decoded batch does not re-encode: %v", err)
		}
		// Each inner message may gain the final property separator.
		if len(enc) > len(b)+len(msgs) {
			t.Fatalf("re-encoded to %d bytes from %d", len(enc), len(b))
		}
		again, err := DecodeBatch(enc, "T")
		if err != nil || !reflect.DeepEqual(again, msgs) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, msgs, again)
		}
	})
}

func FuzzDecodeProperties(f *testing.F) {
	for _, s := range []string{"", "\x01", "\x02", "a\x01b", "a\x01b\x02", "a\x01b\x02c\x01d\x02",
		"a\x01\x02", "\x01b\x02", "a\x01b\x01c\x02", "\x02\x02a\x01b", "a\x01b\x02a\x01c\x02"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		props, err := DecodeProperties(b)
		if err != nil {
			if !errors.Is(err, ErrMalformedProperties) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if err := ValidateProperties(props); err != nil {
			t.Fatalf("decoded properties do not validate: %v", err)
		}
		enc := EncodeProperties(props)
		again, err := DecodeProperties(enc)
		if err != nil || !reflect.DeepEqual(again, props) {
			t.Fatalf("round trip of %q: %v, %v vs %v", b, err, props, again)
		}
	})
}

func FuzzDecodeOffsetMsgID(f *testing.F) {
	for _, s := range []string{"", "C0A8010200002A9F0000000000001000", "c0a8010200002a9f0000000000001000",
		"20010DB800000000000000000000000100002A9F0102030405060708", "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
		"C0A80102FFFFFFFF0000000000001000", strings.Repeat("0", 31), strings.Repeat("0", 57)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, off, err := DecodeOffsetMsgID(s)
		if err != nil {
			return
		}
		if got := EncodeOffsetMsgID(host, off); got != strings.ToUpper(s) {
			t.Fatalf("re-encoded %q as %q", s, got)
		}
	})
}

// checkFuzzAccessors runs the cheap accessors on arbitrary input (they must
// not panic) and, when the record decoded, checks they agree with it.
func checkFuzzAccessors(t *testing.T, b []byte, m *MessageExt) {
	topic, errTopic := RecordTopic(b)
	tags, errTags := RecordTagsHash(b)
	ts, errTS := RecordStoreTimestamp(b)
	qid, errQID := RecordQueueID(b)
	if m == nil {
		return
	}
	if errTopic != nil || errTags != nil || errTS != nil || errQID != nil {
		t.Fatalf("accessors fail on a decodable record: %v %v %v %v", errTopic, errTags, errTS, errQID)
	}
	if topic != m.Topic || tags != TagsHashCode(m.Tags()) || ts != m.StoreTimestamp || qid != m.QueueID {
		t.Fatalf("accessors disagree with DecodeExt: %q %d %d %d vs %+v", topic, tags, ts, qid, m)
	}
}
