package broker

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// sdkBatch is a SEND_BATCH_MESSAGE of n 1 KiB messages as the SDK sends
// them (UNIQ_KEY, TAGS and KEYS, properties encoded sorted).
func sdkBatch(tb testing.TB, n int) *sendRequest {
	tb.Helper()
	msgs := make([]*message.Message, n)
	for i := range msgs {
		m := &message.Message{Topic: "bench", Body: make([]byte, 1024)}
		m.SetUniqKey(fmt.Sprintf("7F0000010001%020X", i))
		m.SetTags("tag-a")
		m.SetKeys([]string{fmt.Sprint("order-", i)})
		m.SetProperty(message.PropertyWaitStoreMsgOK, "true")
		msgs[i] = m
	}
	body, err := message.EncodeBatch(msgs)
	if err != nil {
		tb.Fatal(err)
	}
	req := remoting.NewRequest(remoting.ReqSendBatchMessage, map[string]string{extBornHost: "127.0.0.1:5000"}, body)
	return &sendRequest{req: req, h: protocol.SendMessageHeader{Topic: "bench", Batch: true}}
}

func benchBuilder() *recordBuilder {
	return &recordBuilder{cluster: "c", storeHost: netip.MustParseAddrPort("127.0.0.1:10911"), maxBody: 4 << 20, park: &parker{}}
}

// BenchmarkRecordBuilderBatch: building the stored records of a 256-message
// batch (per op: one batch).
func BenchmarkRecordBuilderBatch(b *testing.B) {
	sr := sdkBatch(b, 256)
	rb := benchBuilder()
	b.ReportAllocs()
	b.SetBytes(int64(len(sr.req.Body)))
	for b.Loop() {
		sr.uniqs = sr.uniqs[:0]
		if _, resp := rb.batch(sr); resp != nil {
			b.Fatal(resp.Remark)
		}
	}
}
