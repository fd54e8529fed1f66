package message

import (
	"bytes"
	"compress/zlib"
	"errors"
	"testing"
)

func TestCompressRoundTrip(t *testing.T) {
	tests := []struct {
		body  []byte
		level int
	}{
		{nil, 1},
		{[]byte("a"), 5},
		{bytes.Repeat([]byte("abc"), CompressThreshold), 9},
	}
	for _, tt := range tests {
		z, err := Compress(tt.body, tt.level)
		if err != nil {
			t.Fatal(err)
		}
		// Must be a plain zlib stream: the clients inflate with zlib.
		r, err := zlib.NewReader(bytes.NewReader(z))
		if err != nil {
			t.Fatalf("not a zlib stream: %v", err)
		}
		r.Close()
		got, err := Decompress(z, len(tt.body))
		if err != nil {
			t.Fatalf("Decompress at exact limit: %v", err)
		}
		if !bytes.Equal(got, tt.body) && len(tt.body) > 0 {
			t.Errorf("round trip of %d bytes gave %d", len(tt.body), len(got))
		}
	}
}

func TestCompressBadLevel(t *testing.T) {
	for _, level := range []int{-1, 0, 10} {
		if _, err := Compress([]byte("x"), level); !errors.Is(err, ErrCompress) {
			t.Errorf("level %d: err = %v, want ErrCompress", level, err)
		}
	}
}

func TestDecompressBomb(t *testing.T) {
	// 8 MiB of zeros compresses to about 8 KiB.
	z, err := Compress(make([]byte, 8<<20), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decompress(z, 1<<20); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("err = %v, want ErrBodyTooLarge", err)
	}
	if _, err := Decompress(z, -5); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("negative max: err = %v, want ErrBodyTooLarge", err)
	}
}

func TestDecompressGarbage(t *testing.T) {
	z, _ := Compress([]byte("hello hello hello"), 5)
	for name, in := range map[string][]byte{
		"empty":     nil,
		"not zlib":  []byte("hello"),
		"truncated": z[:len(z)-3],
	} {
		if _, err := Decompress(in, 1024); !errors.Is(err, ErrCompress) {
			t.Errorf("%s: err = %v, want ErrCompress", name, err)
		}
	}
}

func TestTransactionValue(t *testing.T) {
	tests := []struct{ sysFlag, want int32 }{
		{0, 0},
		{SysFlagCompressed | SysFlagTransactionPrepared, SysFlagTransactionPrepared},
		{SysFlagTransactionCommit | SysFlagBornHostV6, SysFlagTransactionCommit},
		{SysFlagTransactionRollback | SysFlagMultiTags, SysFlagTransactionRollback},
	}
	for _, tt := range tests {
		if got := TransactionValue(tt.sysFlag); got != tt.want {
			t.Errorf("TransactionValue(%#x) = %#x, want %#x", tt.sysFlag, got, tt.want)
		}
	}
	got := SetTransactionValue(SysFlagCompressed|SysFlagTransactionPrepared, SysFlagTransactionCommit)
	if want := SysFlagCompressed | SysFlagTransactionCommit; got != want {
		t.Errorf("SetTransactionValue = %#x, want %#x", got, want)
	}
}
