package message

import (
	"bytes"
	"testing"
)

func benchExt() *MessageExt {
	m := sampleExt()
	m.Body = bytes.Repeat([]byte("b"), 1024)
	m.Properties = map[string]string{
		PropertyTags: "TagA", PropertyKeys: "order-1 user-7",
		PropertyUniqKey: "0A0102032345ABCDEF0012345678000A", PropertyWaitStoreMsgOK: "true",
	}
	return m
}

func BenchmarkAppendExt(b *testing.B) {
	m := benchExt()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(EncodedSize(m)))
	for b.Loop() {
		var err error
		if buf, err = AppendExt(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeExts(b *testing.B) {
	m := benchExt()
	var body []byte
	for range 32 { // a full pull: maxMsgNums defaults to 32
		var err error
		if body, err = AppendExt(body, m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		msgs, err := DecodeExtOpts{VerifyCRC: true}.DecodeExts(body)
		if err != nil || len(msgs) != 32 {
			b.Fatal(len(msgs), err)
		}
	}
}
