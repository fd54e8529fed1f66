package commitlog

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/hashicorp/raft"
)

// FuzzRecord feeds arbitrary bytes to the recovery reader: it must never
// panic, and whatever it accepts must re-encode to the same bytes.
func FuzzRecord(f *testing.F) {
	for _, l := range []*raft.Log{
		{Index: 1},
		{Index: 7, Term: 3, Type: raft.LogConfiguration, Data: []byte("cfg"), Extensions: []byte{1}},
		makeEntry(42),
	} {
		rec := appendRecord(nil, l)
		f.Add(rec, l.Index)
		f.Add(rec[:len(rec)-1], l.Index) // torn by one byte
		f.Add(rec[:frameHeaderSize], l.Index)
	}
	f.Add(make([]byte, recordHeaderSize), uint64(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, uint64(1)) // length at the maximum
	f.Fuzz(func(t *testing.T, b []byte, want uint64) {
		rec, _ := readRecord(bufio.NewReader(bytes.NewReader(b)), want, int64(len(b)))
		if rec == nil {
			return
		}
		var l raft.Log
		decodeRecord(rec, &l)
		if l.Index != want {
			t.Fatalf("accepted index %d, want %d", l.Index, want)
		}
		if got := appendRecord(nil, &l); !bytes.Equal(got, rec) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", got, rec)
		}
	})
}

// FuzzEntryAndCheckpoint checks the fixed-width decoders never panic and
// round-trip what they accept.
func FuzzEntryAndCheckpoint(f *testing.F) {
	f.Add(appendEntry(nil, entry{pos: 1, length: 40, msgOff: 38, msgLen: 2, commitOf: 9}))
	f.Add(encodeCheckpoint(checkpoint{segBase: 1, index: 5, pos: 400, endCO: 77}))
	f.Add(make([]byte, checkpointSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= entrySize {
			if e, err := decodeEntry(b[:entrySize]); err == nil && !bytes.Equal(appendEntry(nil, e), b[:entrySize]) {
				t.Fatal("entry round trip differs")
			}
		}
		if c, err := decodeCheckpoint(b); err == nil && !bytes.Equal(encodeCheckpoint(c), b) {
			t.Fatal("checkpoint round trip differs")
		}
	})
}
