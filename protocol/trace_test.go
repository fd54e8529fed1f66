package protocol

import (
	"strings"
	"testing"
)

// joinTrace writes records the way the clients do: fields split by \x01,
// each record ended by \x02.
func joinTrace(records ...[]string) []byte {
	var b strings.Builder
	for _, r := range records {
		b.WriteString(strings.Join(r, "\x01"))
		b.WriteByte('\x02')
	}
	return []byte(b.String())
}

func TestDecodeTraceRecordsGoClientLayout(t *testing.T) {
	body := joinTrace(
		[]string{"Pub", "1700000000123", "DefaultRegion", "pg", "T", "MSG1", "tagA", "k1", "127.0.0.1:10911", "42", "3", "0", "OFF1", "true", "10.0.0.9"},
		[]string{"SubBefore", "1700000000200", "DefaultRegion", "cg", "REQ1", "MSG1", "0", "k1", "10.0.0.8"},
		[]string{"SubAfter", "REQ1", "MSG1", "5", "false", "null", "1", "1700000000205", "cg"},
	)
	rs, err := DecodeTraceRecords(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d records, want 3", len(rs))
	}
	pub, before, after := rs[0], rs[1], rs[2]
	if pub.Type != TracePub || pub.Timestamp != 1700000000123 || pub.Group != "pg" || pub.Topic != "T" || pub.MsgID != "MSG1" ||
		pub.Tags != "tagA" || pub.Keys != "k1" || pub.StoreHost != "127.0.0.1:10911" || pub.BodyLength != 42 || pub.CostTime != 3 ||
		pub.OffsetMsgID != "OFF1" || !pub.Success || pub.ClientHost != "10.0.0.9" {
		t.Errorf("pub = %+v", pub)
	}
	if before.Type != TraceSubBefore || before.Group != "cg" || before.RequestID != "REQ1" || before.MsgID != "MSG1" || before.ClientHost != "10.0.0.8" {
		t.Errorf("subBefore = %+v", before)
	}
	if after.Type != TraceSubAfter || after.RequestID != "REQ1" || after.CostTime != 5 || after.Success || after.Keys != "" ||
		after.ContextCode != 1 || after.Timestamp != 1700000000205 || after.Group != "cg" {
		t.Errorf("subAfter = %+v", after)
	}
}

// TestDecodeTraceRecordsOlderLayouts: Java 4.x clients write fewer fields
// (no clientHost, no SubAfter timestamp or group); an EndTransaction
// record is decoded too.
func TestDecodeTraceRecordsOlderLayouts(t *testing.T) {
	body := joinTrace(
		[]string{"Pub", "1", "R", "pg", "T", "M", "", "", "h:1", "1", "2", "1", "O", "true"},
		[]string{"SubBefore", "2", "R", "cg", "Q", "M", "3", "null"},
		[]string{"SubAfter", "Q", "M", "4", "true", "null"},
		[]string{"EndTransaction", "5", "R", "pg", "T", "M", "", "", "h:1", "1", "TX", "COMMIT_MESSAGE", "true"},
	)
	rs, err := DecodeTraceRecords(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 || rs[0].MsgType != 1 || rs[1].RetryTimes != 3 || !rs[2].Success || rs[2].Timestamp != 0 ||
		rs[3].TransactionState != "COMMIT_MESSAGE" || !rs[3].FromCheck {
		t.Errorf("records = %+v", rs)
	}
}

func TestDecodeTraceRecordsRejects(t *testing.T) {
	for name, body := range map[string][]byte{
		"unknown type":   joinTrace([]string{"Publish", "1"}),
		"too few fields": joinTrace([]string{"Pub", "1", "R", "pg"}),
		"bad timestamp":  joinTrace([]string{"SubBefore", "soon", "R", "cg", "Q", "M", "0", "k"}),
		"bad success":    joinTrace([]string{"SubAfter", "Q", "M", "4", "yes!", "k"}),
	} {
		if _, err := DecodeTraceRecords(body); err == nil || !strings.Contains(err.Error(), "trace record 0") {
			t.Errorf("%s: err = %v, want one naming record 0", name, err)
		}
	}
}

func TestTraceRecordEncodeRoundTrips(t *testing.T) {
	in := []TraceRecord{
		{Type: TracePub, Timestamp: 9, Group: "g", Topic: "T", MsgID: "M", StoreHost: "h:1", BodyLength: 3, OffsetMsgID: "O", Success: true, ClientHost: "c"},
		{Type: TraceSubBefore, Timestamp: 10, Group: "cg", RequestID: "Q", MsgID: "M", RetryTimes: 2, ClientHost: "c"},
		{Type: TraceSubAfter, RequestID: "Q", MsgID: "M", CostTime: 1, Success: true, Timestamp: 11, Group: "cg"},
		{Type: TraceEndTransaction, Timestamp: 12, Group: "g", MsgID: "M", TransactionID: "X", TransactionState: "ROLLBACK_MESSAGE"},
	}
	var body []byte
	for _, r := range in {
		body = append(body, r.Encode()...)
	}
	out, err := DecodeTraceRecords(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d records back, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i] != in[i] {
			t.Errorf("record %d: %+v, want %+v", i, out[i], in[i])
		}
	}
}

// FuzzDecodeTraceRecords: any body decodes or fails with an error, never
// a panic, and no decoded field holds a separator.
func FuzzDecodeTraceRecords(f *testing.F) {
	f.Add(joinTrace([]string{"Pub", "1", "R", "pg", "T", "M", "", "", "h:1", "1", "2", "1", "O", "true"}))
	f.Add(joinTrace([]string{"SubAfter", "Q", "M", "4", "true", "null", "0", "5", "g"}))
	f.Add([]byte("\x02\x01\x02Pub"))
	f.Fuzz(func(t *testing.T, body []byte) {
		rs, err := DecodeTraceRecords(body)
		if err != nil {
			return
		}
		for _, r := range rs {
			if strings.ContainsAny(r.MsgID+r.Group+r.Topic+r.Keys+r.RequestID, "\x01\x02") {
				t.Fatalf("separator inside a field: %+v", r)
			}
		}
	})
}
