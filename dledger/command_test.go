package dledger

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/wire"
)

// noteCommand is a minimal state-machine command for this package's
// tests (dledgertest's cannot be imported here).
type noteCommand struct {
	typ  CommandType
	note string
}

func (c *noteCommand) Type() CommandType { return c.typ }
func (c *noteCommand) AppendBody(b []byte) ([]byte, error) {
	e := wire.Encoder{B: b, Sentinel: ErrInvalidCommand}
	e.Str(c.note)
	return e.B, e.Err
}

// notes is a Batchable noteCommand.
type notes struct{ items []string }

func (*notes) Type() CommandType { return 7 }
func (c *notes) Len() int        { return len(c.items) }
func (c *notes) Merge(more []Command) Command {
	all := &notes{items: append([]string(nil), c.items...)}
	for _, m := range more {
		all.items = append(all.items, m.(*notes).items...)
	}
	return all
}
func (c *notes) AppendBody(b []byte) ([]byte, error) {
	e := wire.Encoder{B: b, Sentinel: ErrInvalidCommand}
	e.Count(len(c.items))
	for _, s := range c.items {
		e.Str(s)
	}
	return e.B, e.Err
}

func TestStateMachineCommandRoundTrip(t *testing.T) {
	c := &noteCommand{typ: 42, note: "hello"}
	b, err := encodeCommand(c)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != CommandVersion || CommandType(b[1]) != 42 || b[2] != 0 || b[3] != 0 {
		t.Fatalf("header %x", b[:4])
	}
	got, err := decodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := c.AppendBody(nil)
	if rc, ok := got.(rawCommand); !ok || rc.typ != 42 || !bytes.Equal(rc.body, want) {
		t.Fatalf("decoded %+v, want type 42 body %x", got, want)
	}
	for i := 0; i < headerLen; i++ {
		if _, err := decodeEntry(b[:i]); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("header prefix of %d bytes: %v", i, err)
		}
	}
	if _, err := encodeCommand(&PutMessagesCommand{}); !errors.Is(err, ErrInvalidCommand) {
		t.Errorf("encodeCommand(put) = %v", err)
	}
}

func TestUnknownVersion(t *testing.T) {
	for _, v := range []byte{0, 1, 3} {
		if _, err := decodeEntry([]byte{v, 3, 0, 0, 0, 0}); !errors.Is(err, ErrUnknownCommand) {
			t.Errorf("version %d: %v", v, err)
		}
	}
}

func TestPutRoundTripAndSpan(t *testing.T) {
	recs := [][]byte{bytes.Repeat([]byte{1}, 10), bytes.Repeat([]byte{2}, 7)}
	msgs := []AppliedMessage{
		{Topic: "a", QueueID: 1, QueueOffset: 5, CommitOffset: 100, Size: 10, TagsCode: 9, StoreTimestamp: 1, Keys: []string{"k1", "k2"}},
		{Topic: "b", QueueID: 0, QueueOffset: 0, CommitOffset: 110, Size: 7, StoreTimestamp: 2},
	}
	side1, err := encodeSide(&noteCommand{typ: 9, note: "progress"})
	if err != nil {
		t.Fatal(err)
	}
	side2, _ := encodeSide(&notes{items: []string{"x", "y"}})
	b, err := encodePut(3, msgs, [][]byte{side1, side2}, recs)
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	p := v.(*putEntry)
	body1, _ := (&noteCommand{note: "progress"}).AppendBody(nil)
	body2, _ := (&notes{items: []string{"x", "y"}}).AppendBody(nil)
	wantWith := []rawCommand{{typ: 9, body: body1}, {typ: 7, body: body2}}
	if p.Term != 3 || p.FirstCommitOffset != 100 || !reflect.DeepEqual(p.Messages, msgs) || !reflect.DeepEqual(p.With, wantWith) {
		t.Errorf("got %+v", p)
	}
	if want := append(append([]byte{}, recs[0]...), recs[1]...); !bytes.Equal(p.Records, want) {
		t.Errorf("records %x, want %x", p.Records, want)
	}
	first, start, n, ok := SpanFunc(&raft.Log{Type: raft.LogCommand, Term: 3, Data: b})
	if !ok || first != 100 || n != 17 || !bytes.Equal(b[start:start+n], p.Records) {
		t.Errorf("span = %d %d %d %v", first, start, n, ok)
	}
	if _, _, _, ok := SpanFunc(&raft.Log{Type: raft.LogCommand, Term: 4, Data: b}); ok {
		t.Error("span of a stale put (term differs) reported messages")
	}
	meta, _ := encodeCommand(&noteCommand{typ: 4, note: "x"})
	if _, _, _, ok := SpanFunc(&raft.Log{Type: raft.LogCommand, Data: meta}); ok {
		t.Error("span of a state-machine command reported messages")
	}
	for i := 0; i < len(b); i++ {
		if _, err := decodeEntry(b[:i]); err == nil {
			t.Errorf("put prefix of %d bytes decoded", i)
		}
	}
	if _, err := decodeEntry(append(b, 0)); err == nil {
		t.Error("put with a trailing byte decoded")
	}
	if _, err := encodeSide(&PutMessagesCommand{}); !errors.Is(err, ErrInvalidCommand) {
		t.Errorf("a put as a side command: %v", err)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := newCounters()
	s.applied, s.commitNext = 9, 1234
	s.queueNext[QueueKey{"t", 1}] = 80
	s.queueNext[QueueKey{"a", 0}] = 3
	sm := []byte("state machine bytes")
	b := encodeSnapshot(s, sm)
	got, gotSM, err := decodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encodeSnapshot(got, gotSM), b) || !bytes.Equal(gotSM, sm) {
		t.Error("re-encoded snapshot differs")
	}
	if got.queueNext[QueueKey{"t", 1}] != 80 || got.commitNext != 1234 || got.applied != 9 {
		t.Errorf("decoded %+v", got)
	}
	b[10] ^= 1
	if _, _, err := decodeSnapshot(b); !errors.Is(err, ErrCorruptSnapshot) {
		t.Errorf("corrupt snapshot: %v", err)
	}
	old := encodeSnapshot(s, sm)
	old[4] = 1 // version 1
	old = append(old[:len(old)-4], crcOf(old[:len(old)-4])...)
	if _, _, err := decodeSnapshot(old); !errors.Is(err, ErrCorruptSnapshot) || !bytes.Contains([]byte(err.Error()), []byte("version 1")) {
		t.Errorf("version-1 snapshot: %v", err)
	}
}

func crcOf(b []byte) []byte {
	sum := crc32.Checksum(b, castagnoli)
	return []byte{byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)}
}

func TestConfigValidateReportsAll(t *testing.T) {
	c := DefaultConfig()
	c.MaxInflight = 0
	c.TrailingLogs = 0
	c.Peers = []Peer{{ID: "x", Addr: "a"}, {ID: "x", Addr: "a"}}
	err := c.Validate()
	if err == nil {
		t.Fatal("empty config validated")
	}
	for _, want := range []string{"NodeID", "RaftAddr", "DataDir", "LogStore", "MaxInflight", "TrailingLogs", "listed twice", "does not include"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	side, _ := encodeSide(&noteCommand{typ: 9, note: "p"})
	b, _ := encodePut(1, []AppliedMessage{{Topic: "t", Size: 2, Keys: []string{"k"}}}, [][]byte{side}, [][]byte{{1, 2}})
	f.Add(b)
	m, _ := encodeCommand(&notes{items: []string{"a"}})
	f.Add(m)
	f.Add([]byte{})
	f.Add([]byte{CommandVersion, 1, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add(encodeSnapshot(newCounters(), []byte{1}))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodeEntry(data)
		_, _, _, _ = SpanFunc(&raft.Log{Type: raft.LogCommand, Data: data})
		_, _, _ = decodeSnapshot(data)
	})
}

func TestProposalValidation(t *testing.T) {
	bad := []Command{
		nil,
		&PutMessagesCommand{},
		&PutMessagesCommand{Messages: []Message{{Topic: "t", Record: []byte{0, 0, 0, 9, 1}}}},
		&PutMessagesCommand{Messages: []Message{{Record: []byte{0, 0, 0, 4}}}},
		&notes{},
	}
	for i, c := range bad {
		if _, err := newProposal(context.Background(), c, 1<<20); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("case %d: %v, want ErrInvalidCommand", i, err)
		}
	}
	big := &noteCommand{typ: 5, note: string(make([]byte, 100))}
	if _, err := newProposal(context.Background(), big, 50); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized: %v", err)
	}
	pr, err := newProposal(context.Background(), &notes{items: []string{"a", "b"}}, 1<<20)
	if err != nil || pr.msgs != 2 {
		t.Errorf("batchable proposal: %+v, %v", pr, err)
	}
}
