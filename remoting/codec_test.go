package remoting

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// goClientHeader mirrors the official Go client's RemotingCommand header:
// same field order, same json tags. Language is a plain string here; the
// client's LanguageCode type marshals to its name.
type goClientHeader struct {
	Code      int16             `json:"code"`
	Language  string            `json:"language"`
	Version   int16             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
}

// referenceJSONHeader is what encoding/json makes of cmd's header. A nil
// ext is given as {} because our encoder never writes null.
func referenceJSONHeader(t testing.TB, cmd *Command) []byte {
	t.Helper()
	ext := cmd.ExtFields
	if ext == nil {
		ext = map[string]string{}
	}
	b, err := json.Marshal(goClientHeader{cmd.Code, cmd.Language, cmd.Version, cmd.Opaque, cmd.Flag, cmd.Remark, ext})
	if err != nil {
		t.Fatalf("reference marshal: %v", err)
	}
	return b
}

// normalized returns a copy where an empty body is nil and a nil ext is
// empty, the forms the decoder produces.
func normalized(c *Command) *Command {
	cp := *c
	if len(cp.Body) == 0 {
		cp.Body = nil
	}
	cp.ExtFields = maps.Clone(c.ExtFields)
	if cp.ExtFields == nil {
		cp.ExtFields = map[string]string{}
	}
	return &cp
}

func assertSameCommand(t *testing.T, got, want *Command) {
	t.Helper()
	g, w := normalized(got), normalized(want)
	if g.Code != w.Code || g.Language != w.Language || g.Version != w.Version ||
		g.Opaque != w.Opaque || g.Flag != w.Flag || g.Remark != w.Remark ||
		g.SerializeType != w.SerializeType || !bytes.Equal(g.Body, w.Body) ||
		!maps.Equal(g.ExtFields, w.ExtFields) {
		t.Fatalf("command mismatch\n got: %v lang=%q v=%d st=%v\nwant: %v lang=%q v=%d st=%v",
			g, g.Language, g.Version, g.SerializeType, w, w.Language, w.Version, w.SerializeType)
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestEncodeFixtures(t *testing.T) {
	jsonHeader := `{"code":10,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"queueId":"0","topic":"T"}}`
	tests := []struct {
		name string
		cmd  *Command
		want []byte
	}{
		{
			name: "json",
			cmd: &Command{Code: 10, Language: "GO", Version: 317, Opaque: 1,
				ExtFields: map[string]string{"topic": "T", "queueId": "0"}, Body: []byte("hi")},
			want: cat(
				[]byte{0x00, 0x00, 0x00, 0x77}, // 4 + 113 + 2
				[]byte{0x00, 0x00, 0x00, 0x71}, // JSON, header 113
				[]byte(jsonHeader),
				[]byte("hi"),
			),
		},
		{
			name: "rocketmq",
			cmd: &Command{Code: 11, Language: "GO", Version: 317, Opaque: 7, Flag: 1, Remark: "ok",
				ExtFields: map[string]string{"a": "bc"}, Body: []byte{0xff}, SerializeType: SerializeRocketMQ},
			want: cat(
				[]byte{0x00, 0x00, 0x00, 0x25}, // 4 + 32 + 1
				[]byte{0x01, 0x00, 0x00, 0x20}, // ROCKETMQ, header 32
				[]byte{0x00, 0x0b},             // code 11
				[]byte{0x09},                   // GO
				[]byte{0x01, 0x3d},             // version 317
				[]byte{0x00, 0x00, 0x00, 0x07}, // opaque
				[]byte{0x00, 0x00, 0x00, 0x01}, // flag
				[]byte{0x00, 0x00, 0x00, 0x02}, []byte("ok"),
				[]byte{0x00, 0x00, 0x00, 0x09}, // ext length
				[]byte{0x00, 0x01}, []byte("a"), []byte{0x00, 0x00, 0x00, 0x02}, []byte("bc"),
				[]byte{0xff},
			),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.cmd)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("Encode\n got: %q\nwant: %q", got, tt.want)
			}
			dec, err := Decode(tt.want[4:])
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			assertSameCommand(t, dec, tt.cmd)
		})
	}
}

func TestAppendEncodeKeepsPrefix(t *testing.T) {
	prefix := []byte("prefix")
	cmd := NewRequest(ReqHeartBeat, nil, []byte("b"))
	got, err := AppendEncode(append([]byte(nil), prefix...), cmd)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Encode(cmd)
	if !bytes.Equal(got, append(prefix, want...)) {
		t.Fatalf("AppendEncode = %q, want prefix + %q", got, want)
	}
	bad := &Command{SerializeType: 9}
	got, err = AppendEncode(prefix, bad)
	if !errors.Is(err, ErrBadHeader) || !bytes.Equal(got, prefix) {
		t.Fatalf("AppendEncode(bad) = %q, %v; want prefix, ErrBadHeader", got, err)
	}
}

func TestJSONHeaderMatchesEncodingJSON(t *testing.T) {
	many := map[string]string{}
	for i := range 40 {
		many["k"+strconv.Itoa(39-i)] = strconv.Itoa(i)
	}
	tests := []struct {
		name string
		cmd  *Command
	}{
		{"plain request", NewRequest(ReqSendMessage, map[string]string{"topic": "TopicTest", "queueId": "3"}, nil)},
		{"nil ext", &Command{Code: 34, Language: "GO", Version: 317}},
		{"negative numbers", &Command{Code: -1, Version: -317, Opaque: -2147483648, Flag: -1}},
		{"unicode", &Command{Remark: "こんにちは 🎉", ExtFields: map[string]string{"键": "值", "emoji": "🚀"}}},
		{"html and quotes", &Command{Remark: `<a href="x">&'</a>`, ExtFields: map[string]string{"k<": `v"\`}}},
		{"control chars", &Command{Remark: "\x00\x01\b\f\n\r\t\x1f\x7f", ExtFields: map[string]string{"\x02": "\x1e"}}},
		{"invalid utf8", &Command{Remark: "a\xffb\xc0", ExtFields: map[string]string{"\xfe": "\xed\xa0\x80"}}},
		{"line separators", &Command{Remark: "x\u2028y\u2029z", Language: "JAVA"}},
		{"properties separators", &Command{ExtFields: map[string]string{"properties": "TAGS\x01a\x02KEYS\x01k1 k2\x02"}}},
		{"more keys than stack", &Command{ExtFields: many}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := appendJSONHeader(nil, tt.cmd)
			want := referenceJSONHeader(t, tt.cmd)
			if !bytes.Equal(got, want) {
				t.Fatalf("header\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

func roundTripCases() []struct {
	name string
	cmd  *Command
} {
	big := bytes.Repeat([]byte{0xA5, 0x00, 0x5A}, (1<<20)/3+1)[:1<<20]
	return []struct {
		name string
		cmd  *Command
	}{
		{"unicode ext", &Command{Code: 10, Language: LanguageGo, Version: 317, Opaque: 42,
			ExtFields: map[string]string{"topic": "トピック", "tags": "ñ|ü|€"}, Body: []byte("body")}},
		{"empty remark", &Command{Code: 0, Language: LanguageJava, Flag: FlagResponse, ExtFields: map[string]string{"a": ""}}},
		{"nil ext", &Command{Code: 34, Language: LanguageGo, Remark: "r"}},
		{"empty ext", &Command{Code: 34, Language: LanguageGo, ExtFields: map[string]string{}}},
		{"empty body", &Command{Code: 11, Language: LanguageCPP, Body: []byte{}}},
		{"1 MiB body", &Command{Code: 10, Language: LanguageGo, Opaque: -5, Flag: FlagOneway, Body: big,
			ExtFields: map[string]string{"k": "v"}}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		for _, tt := range roundTripCases() {
			t.Run(st.String()+"/"+tt.name, func(t *testing.T) {
				cmd := *tt.cmd
				cmd.SerializeType = st
				frame, err := Encode(&cmd)
				if err != nil {
					t.Fatalf("Encode: %v", err)
				}
				if n := binary.BigEndian.Uint32(frame); int(n) != len(frame)-4 {
					t.Fatalf("length word %d, frame has %d bytes after it", n, len(frame)-4)
				}
				got, err := ReadCommand(bufio.NewReader(bytes.NewReader(frame)), 0)
				if err != nil {
					t.Fatalf("ReadCommand: %v", err)
				}
				assertSameCommand(t, got, &cmd)
			})
		}
	}
}

func TestNilAndEmptyExtEncodeAlike(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		a, _ := Encode(&Command{Code: 1, SerializeType: st})
		b, _ := Encode(&Command{Code: 1, SerializeType: st, ExtFields: map[string]string{}})
		if !bytes.Equal(a, b) {
			t.Errorf("%v: nil ext %q != empty ext %q", st, a, b)
		}
		got, err := Decode(a[4:])
		if err != nil || got.ExtFields == nil {
			t.Errorf("%v: decoded ext = %v, %v; want empty non-nil map", st, got, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	word := func(st SerializeType, n int) []byte {
		return binary.BigEndian.AppendUint32(nil, uint32(st)<<24|uint32(n))
	}
	validBin, _ := Encode(&Command{SerializeType: SerializeRocketMQ, Remark: "r", ExtFields: map[string]string{"k": "v"}})
	binHeader := validBin[8:]
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrMalformedFrame},
		{"three bytes", []byte{0, 0, 0}, ErrMalformedFrame},
		{"header longer than frame", cat(word(SerializeJSON, 10), []byte("{}")), ErrMalformedFrame},
		{"max header length", word(SerializeJSON, maxHeaderLen), ErrMalformedFrame},
		{"unknown serialize type", cat(word(7, 2), []byte("{}")), ErrBadHeader},
		{"empty json header", word(SerializeJSON, 0), ErrBadHeader},
		{"json not object", cat(word(SerializeJSON, 4), []byte("null")), ErrBadHeader},
		{"json truncated", cat(word(SerializeJSON, 9), []byte(`{"code":1`)), ErrBadHeader},
		{"json code overflow", cat(word(SerializeJSON, 14), []byte(`{"code":70000}`)), ErrBadHeader},
		{"json ext array", cat(word(SerializeJSON, 22), []byte(`{"extFields":{"a":[]}}`)), ErrBadHeader},
		{"json trailing garbage", cat(word(SerializeJSON, 3), []byte("{}x")), ErrBadHeader},
		{"binary too short", cat(word(SerializeRocketMQ, 20), make([]byte, 20)), ErrBadHeader},
		{"binary truncated", cat(word(SerializeRocketMQ, len(binHeader)-1), binHeader[:len(binHeader)-1]), ErrBadHeader},
		{"binary trailing byte", cat(word(SerializeRocketMQ, len(binHeader)+1), binHeader, []byte{0}), ErrBadHeader},
		{"binary negative remark", cat(word(SerializeRocketMQ, 21), make([]byte, 13), []byte{0xff, 0xff, 0xff, 0xff}, make([]byte, 4)), ErrBadHeader},
		{"binary remark past end", cat(word(SerializeRocketMQ, 21), make([]byte, 13), []byte{0, 0, 0, 5}, make([]byte, 4)), ErrBadHeader},
		{"binary negative ext", cat(word(SerializeRocketMQ, 21), make([]byte, 17), []byte{0x80, 0, 0, 0}), ErrBadHeader},
		{"binary negative key", cat(word(SerializeRocketMQ, 23), make([]byte, 17), []byte{0, 0, 0, 2, 0xff, 0xff}), ErrBadHeader},
		{"binary key truncated", cat(word(SerializeRocketMQ, 22), make([]byte, 17), []byte{0, 0, 0, 1, 0}), ErrBadHeader},
		{"binary value length missing", cat(word(SerializeRocketMQ, 24), make([]byte, 17), []byte{0, 0, 0, 3, 0, 1, 'k'}), ErrBadHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, err := Decode(tt.frame)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode = %v, %v; want %v", cmd, err, tt.want)
			}
		})
	}
}

func TestDecodeJSONFromJavaPeer(t *testing.T) {
	// fastjson writes fields alphabetically, adds serializeTypeCurrentRPC and
	// may carry non-string ext values or a null remark.
	header := `{"code":0,"extFields":{"queueOffset":12,"ok":true,"none":null,"msgId":"AB"},` +
		`"flag":1,"language":"JAVA","opaque":9,"remark":null,"serializeTypeCurrentRPC":"JSON","version":395}`
	frame := cat(binary.BigEndian.AppendUint32(nil, uint32(len(header))), []byte(header))
	got, err := Decode(frame)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := &Command{Code: 0, Language: LanguageJava, Version: 395, Opaque: 9, Flag: 1,
		ExtFields: map[string]string{"queueOffset": "12", "ok": "true", "none": "", "msgId": "AB"}}
	assertSameCommand(t, got, want)
	again, err := Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(again), `"queueOffset":"12"`) {
		t.Fatalf("re-encoded ext values must be strings: %s", again)
	}
}

func TestReadCommandErrors(t *testing.T) {
	lenWord := func(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	good, _ := Encode(NewRequest(ReqPullMessage, map[string]string{"topic": "t"}, []byte("payload")))
	tests := []struct {
		name     string
		in       []byte
		maxFrame int
		want     error
	}{
		{"clean eof", nil, 0, io.EOF},
		{"partial length", []byte{0, 0}, 0, io.ErrUnexpectedEOF},
		{"negative length", lenWord(-1), 0, ErrMalformedFrame},
		{"min int32 length", lenWord(-1 << 31), 0, ErrMalformedFrame},
		{"length zero", lenWord(0), 0, ErrMalformedFrame},
		{"length three", cat(lenWord(3), []byte{0, 0, 0}), 0, ErrMalformedFrame},
		{"max int32 length", lenWord(1<<31 - 1), 0, ErrFrameTooLarge},
		{"over custom max", good, len(good) - 5, ErrFrameTooLarge},
		{"truncated frame", good[:len(good)-1], 0, io.ErrUnexpectedEOF},
		{"exactly at max", good, len(good) - 4, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCommand(bytes.NewReader(tt.in), tt.maxFrame)
			if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
				t.Fatalf("ReadCommand = %v, want %v", err, tt.want)
			}
			if tt.want == io.EOF && err != io.EOF {
				t.Fatalf("clean EOF must be io.EOF itself, got %#v", err)
			}
		})
	}
}

func TestReadCommandShortReads(t *testing.T) {
	cmds := []*Command{
		NewRequest(ReqSendMessage, map[string]string{"topic": "t", "queueId": "1"}, []byte("hello")),
		{Code: ResPullNotFound, Language: LanguageJava, Flag: FlagResponse, Opaque: 3, Remark: "none", SerializeType: SerializeRocketMQ,
			ExtFields: map[string]string{"nextBeginOffset": "7"}},
		NewRequest(ReqHeartBeat, nil, nil),
	}
	var stream []byte
	for _, c := range cmds {
		var err error
		if stream, err = AppendEncode(stream, c); err != nil {
			t.Fatal(err)
		}
	}
	readers := map[string]func(io.Reader) io.Reader{
		"one byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
		"data err": iotest.DataErrReader,
		"bufio":    func(r io.Reader) io.Reader { return bufio.NewReaderSize(iotest.OneByteReader(r), 16) },
	}
	for name, wrap := range readers {
		t.Run(name, func(t *testing.T) {
			r := wrap(bytes.NewReader(stream))
			for i, want := range cmds {
				got, err := ReadCommand(r, 0)
				if err != nil {
					t.Fatalf("command %d: %v", i, err)
				}
				assertSameCommand(t, got, want)
			}
			if _, err := ReadCommand(r, 0); err != io.EOF {
				t.Fatalf("after last command: %v, want io.EOF", err)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		_, err := ReadCommand(iotest.TimeoutReader(iotest.OneByteReader(bytes.NewReader(stream))), 0)
		if !errors.Is(err, iotest.ErrTimeout) {
			t.Fatalf("ReadCommand = %v, want iotest.ErrTimeout", err)
		}
	})
	t.Run("error mid frame", func(t *testing.T) {
		boom := errors.New("boom")
		r := io.MultiReader(bytes.NewReader(stream[:10]), iotest.ErrReader(boom))
		if _, err := ReadCommand(r, 0); !errors.Is(err, boom) {
			t.Fatalf("ReadCommand = %v, want boom", err)
		}
	})
}

func TestWriteCommand(t *testing.T) {
	var buf bytes.Buffer
	cmd := NewRequest(ReqGetRouteInfoByTopic, map[string]string{"topic": "t"}, nil)
	if err := WriteCommand(&buf, cmd); err != nil {
		t.Fatal(err)
	}
	want, _ := Encode(cmd)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteCommand wrote %q, want %q", buf.Bytes(), want)
	}
	if err := WriteCommand(&buf, &Command{SerializeType: 3}); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("WriteCommand(bad) = %v, want ErrBadHeader", err)
	}
}

func TestEncodeRejectsOversizedBinaryKey(t *testing.T) {
	cmd := &Command{SerializeType: SerializeRocketMQ, ExtFields: map[string]string{strings.Repeat("k", 1<<15): "v"}}
	if _, err := Encode(cmd); !errors.Is(err, ErrBadHeader) {
		t.Fatalf("Encode = %v, want ErrBadHeader", err)
	}
}

func TestLanguageCodes(t *testing.T) {
	for code, name := range map[byte]string{0: "JAVA", 1: "CPP", 2: "DOTNET", 3: "PYTHON", 4: "DELPHI",
		5: "ERLANG", 6: "RUBY", 7: "OTHER", 8: "HTTP", 9: "GO", 10: "PHP", 11: "OMS"} {
		if got := LanguageName(code); got != name {
			t.Errorf("LanguageName(%d) = %q, want %q", code, got, name)
		}
		if got := LanguageCode(name); got != code {
			t.Errorf("LanguageCode(%q) = %d, want %d", name, got, code)
		}
	}
	if LanguageCode("COBOL") != 7 || LanguageName(200) != LanguageOther {
		t.Error("unknown languages must map to OTHER")
	}
}

func TestJSONFastPath(t *testing.T) {
	send := readFixture(t, "SEND_MESSAGE.frame")
	tests := []struct {
		name   string
		header string
		fast   bool
	}{
		{"official client send", string(send[8 : 8+int(binary.BigEndian.Uint32(send[4:])&maxHeaderLen)]), true},
		{"ours", string(appendJSONHeader(nil, &Command{Code: 5, Remark: "é\n\x01<", ExtFields: map[string]string{"a": "\u2028"}})), true},
		{"java with extra string field", `{"code":0,"extFields":{"a":"1"},"flag":1,"language":"JAVA","opaque":9,"remark":"x","serializeTypeCurrentRPC":"JSON","version":395}`, true},
		{"escaped key", `{"co\u0064e":7}`, true},
		{"null remark", `{"code":0,"remark":null}`, false},
		{"number in ext", `{"extFields":{"a":1}}`, false},
		{"surrogate pair", `{"remark":"\ud83d\ude00"}`, false},
		{"invalid utf8", "{\"remark\":\"\xff\"}", false},
		{"case-folded key", `{"CODE":7}`, false},
		{"kelvin key", "{\"remar\u212a\":\"x\"}", false},
		{"float", `{"code":1.0}`, false},
		{"leading zero", `{"code":01}`, false},
		{"overflow", `{"code":32768}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fast, ok := decodeJSONHeaderFast([]byte(tt.header))
			if ok != tt.fast {
				t.Fatalf("fast path ok = %v, want %v", ok, tt.fast)
			}
			slow, err := decodeJSONHeaderSlow([]byte(tt.header))
			if ok {
				if err != nil {
					t.Fatalf("slow path rejects what fast accepted: %v", err)
				}
				assertSameCommand(t, fast, slow)
			}
			if got, err := decodeJSONHeader([]byte(tt.header)); err == nil && slow != nil {
				assertSameCommand(t, got, slow)
			}
		})
	}
}
