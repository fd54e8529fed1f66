package message

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// TestEncodeBatchMatchesGoClient lays out by hand what the Go client's
// MarshalMessageBatch (producer/producer.go, via primitive.Message.Marshal)
// sends for two messages: TOTALSIZE, MAGIC 0, BODYCRC 0, FLAG, BODYLEN,
// BODY, PROPLEN, PROPS. One property each keeps the client's map-order
// encoding deterministic.
func TestEncodeBatchMatchesGoClient(t *testing.T) {
	msgs := []*Message{
		{Topic: "T", Body: []byte("hello"), Properties: map[string]string{"TAGS": "TagA"}},
		{Topic: "T", Flag: -2, Body: []byte("hi")},
	}
	var l lay
	l.u32(20 + 5 + 2 + 10).u32(0).u32(0).u32(0).u32(5).str("hello").u16(10).str("TAGS\x01TagA\x02")
	l.u32(20 + 2 + 2).u32(0).u32(0).u32(0xfffffffe).u32(2).str("hi").u16(0)
	got, err := EncodeBatch(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, l.b) {
		t.Fatalf("EncodeBatch =\n% x\nwant\n% x", got, l.b)
	}
}

func TestBatchRoundTrip(t *testing.T) {
	tests := [][]*Message{
		nil,
		{{Body: []byte("a")}},
		{{}, {Flag: 1, Body: []byte("bb"), Properties: map[string]string{"KEYS": "k1 k2", "UNIQ_KEY": "X"}}},
		{{Body: bytes.Repeat([]byte("z"), 70000)}},
	}
	for i, msgs := range tests {
		b, err := EncodeBatch(msgs)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		got, err := DecodeBatch(b, "topic")
		if err != nil {
			t.Fatalf("case %d: DecodeBatch: %v", i, err)
		}
		var want []*Message
		for _, m := range msgs {
			c := *m
			c.Topic = "topic"
			want = append(want, &c)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("case %d: got %+v, want %+v", i, got, want)
		}
	}
}

func TestDecodeBatchIgnoresMagicAndCRC(t *testing.T) {
	var l lay
	l.u32(20 + 1 + 2).u32(0xdaa320a7).u32(0x12345678).u32(9).u32(1).str("q").u16(0)
	got, err := DecodeBatch(l.b, "T")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Flag != 9 || string(got[0].Body) != "q" {
		t.Errorf("DecodeBatch = %+v", got)
	}
}

func TestDecodeBatchErrors(t *testing.T) {
	item := func(total, bodyLen uint32, body string, propLen uint16, props string) []byte {
		var l lay
		return l.u32(total).u32(0).u32(0).u32(0).u32(bodyLen).str(body).u16(propLen).str(props).b
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"short", []byte{0, 0, 0, 22, 0}, ErrTruncated},
		{"total below min", item(21, 0, "", 0, ""), ErrTruncated},
		{"total past end", item(23, 0, "", 0, ""), ErrTruncated},
		{"total max int32", item(0x7fffffff, 0, "", 0, ""), ErrTruncated},
		{"total negative", item(0x80000000, 0, "", 0, ""), ErrTruncated},
		{"body len negative", item(23, 0xffffffff, "a", 0, ""), ErrCorrupt},
		{"body len past end", item(23, 2, "a", 0, ""), ErrCorrupt},
		{"prop len past end", item(22, 0, "", 1, ""), ErrCorrupt},
		{"prop len short", item(25, 0, "", 2, "a\x01b"), ErrCorrupt},
		{"bad props", item(24, 0, "", 2, "ab"), ErrMalformedProperties},
		{"trailing garbage", append(item(22, 0, "", 0, ""), 1), ErrTruncated},
	}
	for _, tt := range tests {
		if _, err := DecodeBatch(tt.in, "T"); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestEncodeBatchRejectsBadProperties(t *testing.T) {
	_, err := EncodeBatch([]*Message{{Properties: map[string]string{"k": "a\x01"}}})
	if !errors.Is(err, ErrBadProperty) {
		t.Errorf("err = %v, want ErrBadProperty", err)
	}
}
