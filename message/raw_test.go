package message

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestCanonicalProperties: EncodeProperties' output is canonical (and
// RawProperty finds every value in it); encodings it would never write
// are not.
func TestCanonicalProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		props := map[string]string{}
		for j := range r.IntN(6) {
			props[fmt.Sprintf("k%d%c", j, 'a'+r.IntN(26))] = fmt.Sprint(r.IntN(1000))
		}
		if i%7 == 0 {
			props["EMPTY"] = ""
		}
		raw := EncodeProperties(props)
		if !CanonicalProperties(raw) {
			t.Fatalf("EncodeProperties(%v) = %q not canonical", props, raw)
		}
		for k, v := range props {
			if got, ok := RawProperty(raw, k); !ok || string(got) != v {
				t.Fatalf("RawProperty(%q, %s) = %q, %v; want %q", raw, k, got, ok, v)
			}
		}
		if _, ok := RawProperty(raw, "absent"); ok {
			t.Fatalf("RawProperty found an absent key in %q", raw)
		}
	}
	for _, raw := range []string{
		"b\x011\x02a\x012\x02", // map order, as the official Go client writes
		"a\x011\x02a\x012\x02", // duplicate key
		"a\x011",               // no final separator
		"a\x011\x02\x02",       // empty item
		"\x011\x02",            // empty key
		"a1\x02",               // no name-value separator
		"a\x011\x012\x02",      // second name-value separator
	} {
		if CanonicalProperties([]byte(raw)) {
			t.Errorf("%q reported canonical", raw)
		}
	}
	if !CanonicalProperties(nil) {
		t.Error("no properties are canonical")
	}
}

// TestAppendExtRawMatchesAppendExt: a record written from canonical raw
// properties is byte for byte the one AppendExt writes from their map.
func TestAppendExtRawMatchesAppendExt(t *testing.T) {
	props := map[string]string{"KEYS": "a b", "TAGS": "t", "UNIQ_KEY": "U1", "WAIT": "true"}
	m := &MessageExt{Message: Message{Topic: "top", Flag: 3, Body: []byte("body"), Properties: props}, QueueID: 2,
		BornTimestamp: 77, BornHost: netip.MustParseAddrPort("10.0.0.1:5"), StoreHost: netip.MustParseAddrPort("[::1]:9")}
	want, err := AppendExt(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	raw := EncodeProperties(props)
	noMap := *m
	noMap.Properties = nil
	got, err := AppendExtRaw(nil, &noMap, raw)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || len(got) != ExtRawSize(&noMap, raw) {
		t.Fatalf("raw record %x\nwant       %x", got, want)
	}
	if _, err := AppendExtRaw(nil, &noMap, make([]byte, MaxPropertiesLen+1)); err == nil {
		t.Fatal("properties over the limit accepted")
	}
}

// TestDecodeBatchItemsAliases: items alias the body and carry its raw
// properties; DecodeBatch of the same body agrees.
func TestDecodeBatchItemsAliases(t *testing.T) {
	msgs := []*Message{{Body: []byte("one"), Properties: map[string]string{"A": "1"}}, {Flag: 4}}
	body, err := EncodeBatch(msgs)
	if err != nil {
		t.Fatal(err)
	}
	items, err := DecodeBatchItems(body)
	if err != nil || len(items) != 2 {
		t.Fatalf("%v %+v", err, items)
	}
	if string(items[0].Body) != "one" || string(items[0].Props) != "A\x011\x02" || items[1].Flag != 4 || items[1].Body != nil {
		t.Fatalf("items %+v", items)
	}
	items[0].Body[0] = 'O'
	if body[20] != 'O' {
		t.Fatal("item body does not alias the batch body")
	}
	first := MinBatchItemSize + len("one") + len("A\x011\x02") // a whole first item is a valid batch
	for cut := 1; cut < len(body); cut++ {
		if _, err := DecodeBatchItems(body[:cut]); err == nil && cut != first {
			t.Fatalf("a body cut at %d decoded", cut)
		}
	}
}
