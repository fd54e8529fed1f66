package broker

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// mapOrderBatch re-encodes a batch body with each message's properties in
// reverse key order (not canonical: as the official Go client's map order
// may be), keeping everything else.
func mapOrderBatch(t *testing.T, body []byte) []byte {
	t.Helper()
	items, err := message.DecodeBatchItems(body)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, it := range items {
		props, err := message.DecodeProperties(it.Props)
		if err != nil {
			t.Fatal(err)
		}
		enc := message.EncodeProperties(props)
		pairs := bytes.Split(bytes.TrimSuffix(enc, []byte{message.PropertySeparator}), []byte{message.PropertySeparator})
		var rev []byte
		for i := len(pairs) - 1; i >= 0; i-- {
			rev = append(append(rev, pairs[i]...), message.PropertySeparator)
		}
		be := binary.BigEndian
		out = be.AppendUint32(out, uint32(message.MinBatchItemSize+len(it.Body)+len(rev)))
		out = be.AppendUint32(out, 0)
		out = be.AppendUint32(out, 0)
		out = be.AppendUint32(out, uint32(it.Flag))
		out = be.AppendUint32(out, uint32(len(it.Body)))
		out = append(out, it.Body...)
		out = be.AppendUint16(out, uint16(len(rev)))
		out = append(out, rev...)
	}
	return out
}

// TestBatchRecordsRawAndDecodedAgree: a batch whose properties are
// canonical (the SDK's) takes the raw path, one in map order the decoding
// path; both give the same records, tags codes, index keys and UNIQ_KEYs,
// and a DELAY inside a batch is refused on both.
func TestBatchRecordsRawAndDecodedAgree(t *testing.T) {
	rb := benchBuilder()
	sr := sdkBatch(t, 5)
	raw, resp := rb.batch(sr)
	if resp != nil {
		t.Fatal(resp.Remark)
	}
	rawUniqs := append([]string(nil), sr.uniqs...)
	items, _ := message.DecodeBatchItems(sr.req.Body)
	if !message.CanonicalProperties(items[0].Props) {
		t.Fatal("the SDK's batch is not canonical: the test would not take the raw path")
	}
	reordered := mapOrderBatch(t, sr.req.Body)
	items, _ = message.DecodeBatchItems(reordered)
	if message.CanonicalProperties(items[0].Props) {
		t.Fatal("the reordered batch is canonical")
	}
	sr2 := &sendRequest{req: remoting.NewRequest(remoting.ReqSendBatchMessage, sr.req.ExtFields, reordered), h: sr.h}
	dec, resp := rb.batch(sr2)
	if resp != nil {
		t.Fatal(resp.Remark)
	}
	if !reflect.DeepEqual(raw, dec) || !reflect.DeepEqual(rawUniqs, sr2.uniqs) {
		t.Fatalf("raw path %+v %v\ndecoding path %+v %v", raw[0], rawUniqs, dec[0], sr2.uniqs)
	}
	if raw[0].TagsCode != message.TagsHashCode("tag-a") || len(raw[0].Keys) != 2 || rawUniqs[0] == "" {
		t.Fatalf("record 0: tags code %d, keys %v, uniq %q", raw[0].TagsCode, raw[0].Keys, rawUniqs[0])
	}
	m, _, err := message.DecodeExt(raw[0].Record)
	if err != nil || m.Tags() != "tag-a" || m.UniqKey() != rawUniqs[0] || len(m.Body) != 1024 {
		t.Fatalf("stored record decodes to %+v, %v", m, err)
	}

	delayed := &message.Message{Topic: "bench", Body: []byte("x"), Properties: map[string]string{message.PropertyDelayLevel: "3"}}
	body, _ := message.EncodeBatch([]*message.Message{delayed})
	for _, b := range [][]byte{body, mapOrderBatch(t, body)} {
		r := &sendRequest{req: remoting.NewRequest(remoting.ReqSendBatchMessage, nil, b), h: protocol.SendMessageHeader{Topic: "bench", Batch: true}}
		if _, resp := rb.batch(r); resp == nil || resp.Code != remoting.ResMessageIllegal {
			t.Fatalf("a delayed message in a batch: %+v", resp)
		}
	}
}
