package dledger

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
)

func TestMetaCommandRoundTrip(t *testing.T) {
	cmds := []Command{
		&CommitOffsetsCommand{Offsets: []ConsumerOffset{{OffsetKey{"g", "t", 3}, 42}, {OffsetKey{"g2", "t", 0}, -1}}},
		&ResetOffsetsCommand{Offsets: []ConsumerOffset{{OffsetKey{"g", "t", 1}, 7}}},
		&PutTopicCommand{Topic: TopicConfig{Name: "t", ReadQueueNums: 8, WriteQueueNums: 4, Perm: 6, TopicSysFlag: 1, Order: true, FilterType: 1}},
		&DeleteTopicCommand{Name: "t"},
		&PutSubscriptionGroupCommand{Group: SubscriptionGroupConfig{GroupName: "g", ConsumeEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16, BrokerID: 0, WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIdsChangedEnable: true}},
		&DeleteSubscriptionGroupCommand{Name: "g"},
		&DelayProgressCommand{Progress: []DelayProgress{{2, 100}, {17, 5}}},
	}
	for _, c := range cmds {
		b, err := encodeCommand(c)
		if err != nil {
			t.Fatalf("%v: encode: %v", c.Type(), err)
		}
		if b[0] != CommandVersion || CommandType(b[1]) != c.Type() {
			t.Fatalf("%v: header %x", c.Type(), b[:4])
		}
		got, err := decodeEntry(b)
		if err != nil {
			t.Fatalf("%v: decode: %v", c.Type(), err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%v: got %+v, want %+v", c.Type(), got, c)
		}
		// Every strict prefix must fail to decode, never panic.
		for i := 0; i < len(b); i++ {
			if _, err := decodeEntry(b[:i]); err == nil {
				t.Errorf("%v: prefix of %d bytes decoded", c.Type(), i)
			}
		}
		if _, err := decodeEntry(append(b, 0)); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("%v: trailing byte: %v", c.Type(), err)
		}
	}
}

func TestUnknownAndReserved(t *testing.T) {
	if _, err := encodeCommand(&txnStub{}); !errors.Is(err, ErrReserved) {
		t.Errorf("encode reserved: %v", err)
	}
	if _, err := decodeEntry([]byte{CommandVersion, byte(CmdTransactionState), 0, 0}); !errors.Is(err, ErrReserved) {
		t.Errorf("decode reserved: %v", err)
	}
	if _, err := decodeEntry([]byte{CommandVersion, 200, 0, 0}); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := decodeEntry([]byte{2, byte(CmdDeleteTopic), 0, 0, 0, 0}); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("unknown version: %v", err)
	}
}

type txnStub struct{}

func (*txnStub) Type() CommandType     { return CmdTransactionState }
func (*txnStub) encodeBody(e *encoder) {}

func TestPutRoundTripAndSpan(t *testing.T) {
	recs := [][]byte{bytes.Repeat([]byte{1}, 10), bytes.Repeat([]byte{2}, 7)}
	msgs := []AppliedMessage{
		{Topic: "a", QueueID: 1, QueueOffset: 5, CommitOffset: 100, Size: 10, TagsCode: 9, StoreTimestamp: 1, Keys: []string{"k1", "k2"}},
		{Topic: "b", QueueID: 0, QueueOffset: 0, CommitOffset: 110, Size: 7, StoreTimestamp: 2},
	}
	b, err := encodePut(3, msgs, []DelayProgress{{QueueID: 4, Offset: 8}}, recs)
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	p := v.(*putEntry)
	if p.Term != 3 || p.FirstCommitOffset != 100 || !reflect.DeepEqual(p.Messages, msgs) ||
		!reflect.DeepEqual(p.Delay, []DelayProgress{{QueueID: 4, Offset: 8}}) {
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
	meta, _ := encodeCommand(&DeleteTopicCommand{Name: "x"})
	if _, _, _, ok := SpanFunc(&raft.Log{Type: raft.LogCommand, Data: meta}); ok {
		t.Error("span of a metadata command reported messages")
	}
	for i := 0; i < len(b); i++ {
		if _, err := decodeEntry(b[:i]); err == nil {
			t.Errorf("put prefix of %d bytes decoded", i)
		}
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := newState()
	s.applied, s.commitNext = 9, 1234
	s.topics["t"] = TopicConfig{Name: "t", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
	s.groups["g"] = SubscriptionGroupConfig{GroupName: "g", ConsumeEnable: true}
	s.offsets[OffsetKey{"g", "t", 1}] = 77
	s.queueNext[QueueKey{"t", 1}] = 80
	s.delay[3] = 12
	b := s.encodeSnapshot()
	got, err := decodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.encodeSnapshot(), b) {
		t.Error("re-encoded snapshot differs")
	}
	if got.offsets[OffsetKey{"g", "t", 1}] != 77 || got.queueNext[QueueKey{"t", 1}] != 80 || got.commitNext != 1234 {
		t.Errorf("decoded %+v", got)
	}
	b[10] ^= 1
	if _, err := decodeSnapshot(b); !errors.Is(err, ErrCorruptSnapshot) {
		t.Errorf("corrupt snapshot: %v", err)
	}
}

func TestConfigValidateReportsAll(t *testing.T) {
	c := DefaultConfig()
	c.MaxInflight = 0
	c.Peers = []Peer{{ID: "x", Addr: "a"}, {ID: "x", Addr: "a"}}
	err := c.Validate()
	if err == nil {
		t.Fatal("empty config validated")
	}
	for _, want := range []string{"NodeID", "RaftAddr", "DataDir", "MaxInflight", "listed twice", "does not include"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	b, _ := encodePut(1, []AppliedMessage{{Topic: "t", Size: 2, Keys: []string{"k"}}}, nil, [][]byte{{1, 2}})
	f.Add(b)
	m, _ := encodeCommand(&CommitOffsetsCommand{Offsets: []ConsumerOffset{{OffsetKey{"g", "t", 1}, 2}}})
	f.Add(m)
	f.Add([]byte{})
	f.Add([]byte{1, 1, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodeEntry(data)
		_, _, _, _ = SpanFunc(&raft.Log{Type: raft.LogCommand, Data: data})
		_, _ = decodeSnapshot(data)
	})
}

func TestProposalValidation(t *testing.T) {
	bad := []Command{
		nil,
		&PutMessagesCommand{},
		&PutMessagesCommand{Messages: []Message{{Topic: "t", Record: []byte{0, 0, 0, 9, 1}}}},
		&PutMessagesCommand{Messages: []Message{{Record: []byte{0, 0, 0, 4}}}},
		&CommitOffsetsCommand{},
	}
	for i, c := range bad {
		if _, err := newProposal(context.Background(), c, 1<<20); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("case %d: %v, want ErrInvalidCommand", i, err)
		}
	}
	big := &DeleteTopicCommand{Name: string(make([]byte, 100))}
	if _, err := newProposal(context.Background(), big, 50); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized: %v", err)
	}
}
