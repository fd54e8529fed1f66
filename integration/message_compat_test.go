package integration

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/raftmq/raftmq/message"
)

// These tests hold raftmq's message codecs against the official Go client's
// own encoders and decoders (its exported primitive package), so "the same
// bytes" is proven by the client's code, not by our reading of it.

func sampleExt(bornHost, storeHost string) *message.MessageExt {
	m := &message.MessageExt{
		Message: message.Message{
			Topic: "TopicTest",
			Flag:  7,
			Body:  []byte("hello raftmq — ünïcode body"),
		},
		QueueID:                   3,
		QueueOffset:               42,
		BornTimestamp:             1764681600123,
		BornHost:                  netip.MustParseAddrPort(bornHost),
		StoreTimestamp:            1764681600456,
		StoreHost:                 netip.MustParseAddrPort(storeHost),
		CommitLogOffset:           1 << 33,
		ReconsumeTimes:            2,
		PreparedTransactionOffset: 0,
	}
	m.SetTags("TagA")
	m.SetKeys([]string{"order-1", "user-9"})
	m.SetUniqKey("7F0000010C3E000000002B4A2E6C0001")
	m.SetProperty("custom", "v")
	return m
}

func TestOfficialClientDecodesOurStoredLayout(t *testing.T) {
	for _, tc := range []struct{ name, born, store string }{
		{"ipv4", "192.0.2.2:51234", "127.0.0.1:10911"},
		{"ipv6", "[2001:db8::2]:51234", "[2001:db8::1]:10911"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := sampleExt(tc.born, tc.store)
			// Two records back to back, as a pull body carries them.
			buf, err := message.AppendExt(nil, want)
			if err != nil {
				t.Fatal(err)
			}
			second := sampleExt(tc.born, tc.store)
			second.QueueOffset++
			second.CommitLogOffset += int64(len(buf))
			if buf, err = message.AppendExt(buf, second); err != nil {
				t.Fatal(err)
			}
			got := primitive.DecodeMessage(buf)
			if len(got) != 2 {
				t.Fatalf("official client decoded %d messages, want 2", len(got))
			}
			g := got[0]
			if g.Topic != want.Topic || g.Flag != want.Flag || !bytes.Equal(g.Body, want.Body) {
				t.Errorf("topic/flag/body = %q/%d/%q, want %q/%d/%q", g.Topic, g.Flag, g.Body, want.Topic, want.Flag, want.Body)
			}
			if g.Queue.QueueId != int(want.QueueID) || g.QueueOffset != want.QueueOffset || g.CommitLogOffset != want.CommitLogOffset {
				t.Errorf("queue/offset/commit = %d/%d/%d", g.Queue.QueueId, g.QueueOffset, g.CommitLogOffset)
			}
			if g.BornTimestamp != want.BornTimestamp || g.StoreTimestamp != want.StoreTimestamp || g.ReconsumeTimes != want.ReconsumeTimes {
				t.Errorf("timestamps/reconsume = %d/%d/%d", g.BornTimestamp, g.StoreTimestamp, g.ReconsumeTimes)
			}
			if g.GetTags() != "TagA" || g.GetKeys() != "order-1 user-9" || g.GetProperty("custom") != "v" {
				t.Errorf("properties = %v", g.GetProperties())
			}
			if uint32(g.BodyCRC) != message.BodyCRC32(want.Body) {
				t.Errorf("body crc = %d, want %d", uint32(g.BodyCRC), message.BodyCRC32(want.Body))
			}
			if !strings.EqualFold(g.OffsetMsgId, want.MsgID()) {
				t.Errorf("offsetMsgId = %s, ours %s", g.OffsetMsgId, want.MsgID())
			}
			if got[1].QueueOffset != second.QueueOffset || got[1].CommitLogOffset != second.CommitLogOffset {
				t.Errorf("second record offsets = %d/%d", got[1].QueueOffset, got[1].CommitLogOffset)
			}
		})
	}
}

func TestOfficialClientBatchBytesDecode(t *testing.T) {
	var body []byte
	var want []*primitive.Message
	for i, tag := range []string{"A", "B", ""} {
		m := primitive.NewMessage("TopicTest", bytes.Repeat([]byte{byte('a' + i)}, 10*i+1))
		m.Flag = int32(i)
		if tag != "" {
			m.WithTag(tag)
		}
		m.WithKeys([]string{"k" + tag})
		m.WithProperty(primitive.PropertyUniqueClientMessageIdKeyIndex, primitive.CreateUniqID())
		want = append(want, m)
		body = append(body, m.Marshal()...)
	}
	got, err := message.DecodeBatch(body, "TopicTest")
	if err != nil {
		t.Fatalf("DecodeBatch of the official client's bytes: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("decoded %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Topic != "TopicTest" || got[i].Flag != want[i].Flag || !bytes.Equal(got[i].Body, want[i].Body) {
			t.Errorf("msg %d = %+v", i, got[i])
		}
		for k, v := range want[i].GetProperties() {
			if got[i].Property(k) != v {
				t.Errorf("msg %d property %s = %q, want %q", i, k, got[i].Property(k), v)
			}
		}
	}
	// And our encoder produces bytes the same decoder accepts identically:
	// re-encode and compare message by message with the client's Marshal
	// (property order may differ, so compare decoded content).
	ours, err := message.EncodeBatch(got)
	if err != nil {
		t.Fatal(err)
	}
	again, err := message.DecodeBatch(ours, "TopicTest")
	if err != nil || len(again) != len(got) {
		t.Fatalf("round trip: %v, %d messages", err, len(again))
	}
	if len(ours) != len(body) {
		t.Errorf("our batch is %d bytes, the client's %d", len(ours), len(body))
	}
}

func TestOfficialClientMsgIDCodecs(t *testing.T) {
	host := netip.MustParseAddrPort("10.1.2.3:10911")
	ours := message.EncodeOffsetMsgID(host, 123456789)
	theirs := primitive.CreateMessageId([]byte{10, 1, 2, 3}, 10911, 123456789)
	if ours != theirs {
		t.Fatalf("offsetMsgId = %s, official client %s", ours, theirs)
	}
	id, err := primitive.UnmarshalMsgID([]byte(ours))
	if err != nil || id.Offset != 123456789 || id.Port != 10911 {
		t.Fatalf("official client parsed our id as %+v, %v", id, err)
	}
	gotHost, off, err := message.DecodeOffsetMsgID(theirs)
	if err != nil || gotHost != host || off != 123456789 {
		t.Fatalf("DecodeOffsetMsgID(%s) = %v %d %v", theirs, gotHost, off, err)
	}

	// The official client's unique keys parse with ours.
	uk := primitive.CreateUniqID()
	ip, at, err := message.ParseUniqKey(uk)
	if err != nil {
		t.Fatalf("ParseUniqKey(%s): %v", uk, err)
	}
	if !ip.IsValid() {
		t.Fatalf("ParseUniqKey(%s) ip invalid", uk)
	}
	if d := time.Since(at); d < -time.Minute || d > time.Minute {
		t.Fatalf("ParseUniqKey(%s) time %v is %v from now", uk, at, d)
	}
}

func TestOfficialClientPropertiesDecode(t *testing.T) {
	m := primitive.NewMessage("t", nil)
	m.WithTag("T1")
	m.WithKeys([]string{"a", "b"})
	m.WithDelayTimeLevel(3)
	m.WithProperty("x", "y z")
	got, err := message.DecodeProperties([]byte(m.MarshallProperties()))
	if err != nil {
		t.Fatal(err)
	}
	want := m.GetProperties()
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	back := &primitive.Message{}
	back.UnmarshalProperties(message.EncodeProperties(got))
	for k, v := range want {
		if back.GetProperty(k) != v {
			t.Errorf("client decoding ours: %s = %q, want %q", k, back.GetProperty(k), v)
		}
	}
}
