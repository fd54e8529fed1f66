package message

import (
	"errors"
	"net/netip"
	"testing"
)

func TestPatchRecord(t *testing.T) {
	hosts := []struct{ born, store string }{
		{"10.0.0.1:1", "10.0.0.2:2"},
		{"[2001:db8::1]:1", "10.0.0.2:2"},
		{"10.0.0.1:1", "[2001:db8::2]:2"},
		{"[2001:db8::1]:1", "[2001:db8::2]:2"},
	}
	for _, h := range hosts {
		m := sampleExt()
		m.BornHost = netip.MustParseAddrPort(h.born)
		m.StoreHost = netip.MustParseAddrPort(h.store)
		rec, err := AppendExt(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range []error{
			PatchQueueOffset(rec, 777),
			PatchCommitLogOffset(rec, 1<<40),
			PatchStoreTimestamp(rec, 1800000000000),
			PatchQueueID(rec, 9),
		} {
			if err != nil {
				t.Fatalf("%s: patch: %v", h, err)
			}
		}
		got, _, err := DecodeExtOpts{VerifyCRC: true}.DecodeExt(rec)
		if err != nil {
			t.Fatalf("%s: decode after patch: %v", h, err)
		}
		if got.QueueOffset != 777 || got.CommitLogOffset != 1<<40 || got.StoreTimestamp != 1800000000000 || got.QueueID != 9 {
			t.Errorf("%s: patched fields = %d %d %d %d", h, got.QueueOffset, got.CommitLogOffset, got.StoreTimestamp, got.QueueID)
		}
		if got.BornTimestamp != m.BornTimestamp || got.StoreHost != m.StoreHost || got.ReconsumeTimes != m.ReconsumeTimes {
			t.Errorf("%s: patch touched a neighbour: %+v", h, got)
		}
		checkAccessors(t, rec, got)
	}
}

func checkAccessors(t *testing.T, rec []byte, want *MessageExt) {
	t.Helper()
	if n, err := PeekTotalSize(rec); err != nil || n != len(rec) {
		t.Errorf("PeekTotalSize = %d, %v; want %d", n, err, len(rec))
	}
	if v, err := RecordQueueID(rec); err != nil || v != want.QueueID {
		t.Errorf("RecordQueueID = %d, %v", v, err)
	}
	if v, err := RecordQueueOffset(rec); err != nil || v != want.QueueOffset {
		t.Errorf("RecordQueueOffset = %d, %v", v, err)
	}
	if v, err := RecordCommitLogOffset(rec); err != nil || v != want.CommitLogOffset {
		t.Errorf("RecordCommitLogOffset = %d, %v", v, err)
	}
	if v, err := RecordSysFlag(rec); err != nil || v != want.SysFlag {
		t.Errorf("RecordSysFlag = %#x, %v", v, err)
	}
	if v, err := RecordStoreTimestamp(rec); err != nil || v != want.StoreTimestamp {
		t.Errorf("RecordStoreTimestamp = %d, %v", v, err)
	}
	if v, err := RecordTopic(rec); err != nil || v != want.Topic {
		t.Errorf("RecordTopic = %q, %v", v, err)
	}
	if v, err := RecordTagsHash(rec); err != nil || v != TagsHashCode(want.Tags()) {
		t.Errorf("RecordTagsHash = %d, %v", v, err)
	}
}

func TestRecordProperty(t *testing.T) {
	m := sampleExt()
	m.Properties = map[string]string{"A": "1", "TAGS": "TagB", "Z": ""}
	rec, err := AppendExt(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key, want string
		ok        bool
	}{{"A", "1", true}, {"TAGS", "TagB", true}, {"Z", "", true}, {"TAG", "", false}, {"AGS", "", false}}
	for _, tt := range tests {
		v, ok, err := RecordProperty(rec, tt.key)
		if err != nil || v != tt.want || ok != tt.ok {
			t.Errorf("RecordProperty(%q) = %q, %v, %v; want %q, %v", tt.key, v, ok, err, tt.want, tt.ok)
		}
	}
	if h, err := RecordTagsHash(rec); err != nil || h != 2598920 {
		t.Errorf("RecordTagsHash = %d, %v; want 2598920", h, err)
	}
	m.Properties = nil
	rec, _ = AppendExt(nil, m)
	if h, err := RecordTagsHash(rec); err != nil || h != 0 {
		t.Errorf("RecordTagsHash without tags = %d, %v; want 0", h, err)
	}
}

func TestRecordAccessorsTruncated(t *testing.T) {
	rec := sampleExtBytes()
	short := rec[:40]
	errs := []error{
		PatchStoreTimestamp(short, 1),
		PatchQueueOffset(rec[:27], 1),
		PatchCommitLogOffset(rec[:35], 1),
		PatchQueueID(rec[:15], 1),
	}
	_, err := RecordStoreTimestamp(short)
	errs = append(errs, err)
	_, err = RecordTopic(rec[:len(rec)-1])
	errs = append(errs, err)
	if topic, err := RecordTopic(append(rec, "next record"...)); err != nil || topic != "T1" {
		t.Errorf("RecordTopic with trailing bytes = %q, %v; want T1", topic, err)
	}
	bad := withUint32(rec, 84, 13) // BODYLEN past the end
	if _, _, err := RecordProperty(bad, "TAGS"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("RecordProperty of a corrupt record: %v, want ErrCorrupt", err)
	}
	_, err = RecordQueueID(rec[:3])
	errs = append(errs, err)
	for i, err := range errs {
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("case %d: err = %v, want ErrTruncated", i, err)
		}
	}
}

func TestRecordProperties(t *testing.T) {
	m := &MessageExt{Message: Message{Topic: "t", Body: []byte("body"), Properties: map[string]string{"a": "1", "TAGS": "x"}},
		BornHost: netip.MustParseAddrPort("127.0.0.1:1"), StoreHost: netip.MustParseAddrPort("127.0.0.1:2")}
	rec, err := AppendExt(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	p, err := RecordProperties(rec)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := p.Get("a"); !ok || v != "1" {
		t.Fatalf("a = %q %v", v, ok)
	}
	if _, ok := p.Get("missing"); ok {
		t.Fatal("missing property found")
	}
	if _, err := RecordProperties(rec[:len(rec)-1]); err == nil {
		t.Fatal("truncated record decoded")
	}
}
