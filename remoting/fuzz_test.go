package remoting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func fuzzSeedCommands() []*Command {
	return []*Command{
		NewRequest(ReqSendMessage, map[string]string{"topic": "T", "queueId": "0", "properties": "TAGS\x01a\x02"}, []byte("hi")),
		{Code: ResPullOffsetMoved, Language: LanguageJava, Flag: FlagResponse, Opaque: -1, Remark: "moved",
			ExtFields: map[string]string{"nextBeginOffset": "12"}},
		{Code: ReqHeartBeat, Language: "ü", Flag: FlagOneway, Body: []byte{0}},
	}
}

// edgeLengths are the length values seeded into every length field.
var edgeLengths = []uint32{0, 1, 0x7fffffff, 0xffffffff, 0x80000000, 0x00ffffff}

func FuzzDecodeFrame(f *testing.F) {
	for _, c := range fuzzSeedCommands() {
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			cc := *c
			cc.SerializeType = st
			frame, err := Encode(&cc)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(frame[4:])
			f.Add(frame[4 : len(frame)-1]) // truncated
		}
	}
	for _, n := range edgeLengths {
		f.Add(binary.BigEndian.AppendUint32(nil, n))
		f.Add(append(binary.BigEndian.AppendUint32(nil, 1<<24|n&maxHeaderLen), make([]byte, 21)...))
	}
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, frame []byte) {
		cmd, err := Decode(frame)
		if err != nil {
			if !isCodecError(err) {
				t.Fatalf("Decode error %v is not a codec sentinel", err)
			}
			return
		}
		again, err := Encode(cmd)
		if err != nil {
			t.Fatalf("re-encode of decoded %v: %v", cmd, err)
		}
		back, err := Decode(again[4:])
		if err != nil {
			t.Fatalf("decode of re-encoded frame: %v", err)
		}
		assertSameCommand(t, back, cmd)
	})
}

func FuzzDecodeJSONHeader(f *testing.F) {
	for _, c := range fuzzSeedCommands() {
		f.Add(appendJSONHeader(nil, c))
	}
	f.Add([]byte(`{"code":0,"extFields":{"n":12,"b":true,"z":null},"flag":1,"language":"JAVA","opaque":9,"remark":null,"serializeTypeCurrentRPC":"JSON","version":395}`))
	f.Add([]byte(`{"code":2147483647}`))
	f.Add([]byte(`{"opaque":-2147483648,"flag":4294967296}`))
	f.Add([]byte(`{"extFields":{"a":[1]}}`))
	f.Add([]byte(`{"remark":"\ud800\u2028<>&"}`))
	f.Add([]byte(`{`))
	f.Add([]byte(``))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"code":1,"remarK":"kelvin","extFields":{"p":"a\u0001b\/c\"d"},"extFields":{"q":"2"}}`))
	f.Add([]byte(` { "code" : -0 , "language" : "GO" , "serializeTypeCurrentRPC" : "JSON" } `))
	f.Fuzz(func(t *testing.T, header []byte) {
		if fast, ok := decodeJSONHeaderFast(header); ok {
			slow, err := decodeJSONHeaderSlow(header)
			if err != nil {
				t.Fatalf("fast path accepted %q, encoding/json rejects it: %v", header, err)
			}
			assertSameCommand(t, fast, slow)
		}
		cmd, err := decodeJSONHeader(header)
		if err != nil {
			if !errors.Is(err, ErrBadHeader) {
				t.Fatalf("error %v does not wrap ErrBadHeader", err)
			}
			return
		}
		enc := appendJSONHeader(nil, cmd)
		if ref := referenceJSONHeader(t, cmd); !bytes.Equal(enc, ref) {
			t.Fatalf("encoder differs from encoding/json\n got: %s\nwant: %s", enc, ref)
		}
		back, err := decodeJSONHeader(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded header %s: %v", enc, err)
		}
		assertSameCommand(t, back, cmd)
	})
}

func FuzzDecodeRocketMQHeader(f *testing.F) {
	for _, c := range fuzzSeedCommands() {
		h, err := appendRocketMQHeader(nil, c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(h)
		f.Add(h[:len(h)-1])
		for _, n := range edgeLengths {
			remark := bytes.Clone(h)
			binary.BigEndian.PutUint32(remark[13:], n)
			f.Add(remark)
			ext := bytes.Clone(h)
			binary.BigEndian.PutUint32(ext[17+len(c.Remark):], n)
			f.Add(ext)
		}
	}
	f.Add([]byte{})
	f.Add(make([]byte, 1))
	f.Add(make([]byte, rocketMQFixedLen))
	f.Fuzz(func(t *testing.T, header []byte) {
		cmd, err := decodeRocketMQHeader(header)
		if err != nil {
			if !errors.Is(err, ErrBadHeader) {
				t.Fatalf("error %v does not wrap ErrBadHeader", err)
			}
			return
		}
		enc, err := appendRocketMQHeader(nil, cmd)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := decodeRocketMQHeader(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded header: %v", err)
		}
		assertSameCommand(t, back, cmd)
	})
}
