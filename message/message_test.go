package message

import (
	"reflect"
	"testing"
)

func TestMessageHelpers(t *testing.T) {
	var m Message
	if got := m.Tags(); got != "" {
		t.Fatalf("Tags of empty message = %q, want empty", got)
	}
	m.SetTags("TagA")
	m.SetKeys([]string{"k1", "k2"})
	m.SetDelayLevel(3)
	m.SetUniqKey("AC110001")
	m.SetProperty("custom", "v")

	want := map[string]string{
		PropertyTags: "TagA", PropertyKeys: "k1 k2", PropertyDelayLevel: "3",
		PropertyUniqKey: "AC110001", "custom": "v",
	}
	if !reflect.DeepEqual(m.Properties, want) {
		t.Fatalf("Properties = %v, want %v", m.Properties, want)
	}
	if got := m.Keys(); !reflect.DeepEqual(got, []string{"k1", "k2"}) {
		t.Errorf("Keys = %q", got)
	}
	if got := m.DelayLevel(); got != 3 {
		t.Errorf("DelayLevel = %d, want 3", got)
	}
	if got := m.UniqKey(); got != "AC110001" {
		t.Errorf("UniqKey = %q", got)
	}
	if got := m.RemoveProperty("custom"); got != "v" {
		t.Errorf("RemoveProperty = %q, want v", got)
	}
	m.SetTags("")
	m.SetKeys(nil)
	m.SetDelayLevel(0)
	m.SetUniqKey("")
	if len(m.Properties) != 0 {
		t.Errorf("after clearing, Properties = %v, want empty", m.Properties)
	}
}

func TestKeysAndDelayParsing(t *testing.T) {
	tests := []struct {
		keys      string
		wantKeys  []string
		delay     string
		wantDelay int
	}{
		{"a", []string{"a"}, "1", 1},
		{" a  b ", []string{"a", "b"}, "18", 18},
		{"", nil, "x", 0},
		{"  ", nil, "", 0},
	}
	for _, tt := range tests {
		m := Message{Properties: map[string]string{PropertyKeys: tt.keys, PropertyDelayLevel: tt.delay}}
		if got := m.Keys(); !reflect.DeepEqual(got, tt.wantKeys) {
			t.Errorf("Keys(%q) = %q, want %q", tt.keys, got, tt.wantKeys)
		}
		if got := m.DelayLevel(); got != tt.wantDelay {
			t.Errorf("DelayLevel(%q) = %d, want %d", tt.delay, got, tt.wantDelay)
		}
	}
}

func TestTagsHashCode(t *testing.T) {
	// Expected values come from a separate reference: Java's recurrence
	// h = 31*h + unit over the UTF-16BE encoding, wrapped to int32.
	tests := []struct {
		tags string
		want int64
	}{
		{"", 0},
		{"TagA", 2598919},
		{"TagB", 2598920},
		{"*", 42},
		{"TagA||TagB", 1789476431},
		{"\u6807\u7b7e", 857175}, // 标签
		{"\u65e5\u672c\u8a9e\u30bf\u30b0", -858417240}, // 日本語タグ, negative
		{"\u00e9", 233},                  // é, two UTF-8 bytes
		{"\U0001f600", 1772899},          // 😀, surrogate pair
		{"a\U0001f600b", 57849694},       // pair in the middle
		{"\U0001d11emusic", 1496085755},  // 𝄞 then ASCII
		{"\uffff", 65535},                // last BMP unit
		{"zzzzzzzzzzzzzzzz", -509494784}, // overflow wraps
	}
	for _, tt := range tests {
		if got := TagsHashCode(tt.tags); got != tt.want {
			t.Errorf("TagsHashCode(%q) = %d, want %d", tt.tags, got, tt.want)
		}
	}
}
