package wire

import (
	"errors"
	"strings"
	"testing"
)

var errMine = errors.New("mine: bad")

func TestRoundTrip(t *testing.T) {
	e := Encoder{}
	e.U8(7)
	e.U16(65535)
	e.I32(-2)
	e.I64(-1 << 40)
	e.U64(1 << 63)
	e.Bool(true)
	e.Str("héllo")
	e.Count(3)
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	d := Decoder{B: e.B}
	if d.U8() != 7 || d.U16() != 65535 || d.I32() != -2 || d.I64() != -1<<40 || d.U64() != 1<<63 || !d.Bool() ||
		d.Str() != "héllo" || d.Count(0) != 3 || d.End() != nil {
		t.Fatalf("decoded differently: %v", d.Err)
	}
}

func TestErrorsLatchAndWrapTheSentinel(t *testing.T) {
	e := Encoder{Sentinel: errMine}
	e.Str(strings.Repeat("x", 1<<16))
	e.U8(1)
	if !errors.Is(e.Err, errMine) || len(e.B) != 2+(1<<16-1)+1 {
		t.Fatalf("long string: %v, %d bytes", e.Err, len(e.B))
	}
	d := Decoder{B: []byte{0, 0, 0, 200, 1}}
	if n := d.Count(4); n != 0 || !errors.Is(d.Err, ErrMalformed) {
		t.Fatalf("oversized count: %d, %v", n, d.Err)
	}
	if d.U8() != 0 {
		t.Fatal("read after a latched error returned data")
	}
	d = Decoder{B: []byte{2}, Sentinel: errMine}
	if d.Bool(); !errors.Is(d.Err, errMine) {
		t.Fatalf("bool 2: %v", d.Err)
	}
	d = Decoder{B: []byte{1, 2}}
	d.U8()
	if err := d.End(); err == nil || !strings.Contains(err.Error(), "1 trailing bytes") {
		t.Fatalf("End = %v", err)
	}
}

func FuzzDecoder(f *testing.F) {
	f.Add([]byte{0, 3, 'a', 'b', 'c', 0, 0, 0, 1})
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Decoder{B: b}
		_ = d.Str()
		n := d.Count(1)
		for i := 0; i < n && d.Err == nil; i++ {
			d.Bool()
		}
		_ = d.Bytes(len(b))
		if d.Off > len(b) {
			t.Fatalf("offset %d past %d bytes", d.Off, len(b))
		}
	})
}
