package message

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPropertiesRoundTrip(t *testing.T) {
	tests := []map[string]string{
		nil,
		{"TAGS": "TagA"},
		{"KEYS": "k1 k2", "UNIQ_KEY": "AC11", "WAIT": "true"},
		{"empty": ""},
		{"u": "\u6807\u7b7e\U0001f600"},
	}
	for _, props := range tests {
		b := EncodeProperties(props)
		if len(b) != PropertiesLen(props) {
			t.Errorf("len(EncodeProperties(%v)) = %d, PropertiesLen = %d", props, len(b), PropertiesLen(props))
		}
		got, err := DecodeProperties(b)
		if err != nil {
			t.Fatalf("DecodeProperties(%q): %v", b, err)
		}
		if !reflect.DeepEqual(got, props) {
			t.Errorf("round trip of %v = %v", props, got)
		}
	}
}

func TestEncodePropertiesSorted(t *testing.T) {
	props := map[string]string{"b": "2", "a": "1", "c": "3"}
	want := "a\x011\x02b\x012\x02c\x013\x02"
	for i := 0; i < 20; i++ { // map order varies between iterations
		if got := string(EncodeProperties(props)); got != want {
			t.Fatalf("EncodeProperties = %q, want %q", got, want)
		}
	}
	if got := string(AppendProperties([]byte("x"), props)); got != "x"+want {
		t.Errorf("AppendProperties = %q, want prefix kept", got)
	}
}

func TestDecodePropertiesTolerant(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
	}{
		{"", nil},
		{"a\x011", map[string]string{"a": "1"}}, // no trailing separator
		{"a\x011\x02b\x012", map[string]string{"a": "1", "b": "2"}}, // last one without
		{"\x02\x02a\x011\x02\x02", map[string]string{"a": "1"}},     // empty items
		{"a\x01\x02", map[string]string{"a": ""}},                   // empty value
		{"a\x011\x02a\x012\x02", map[string]string{"a": "2"}},       // last wins
		{"\x02", nil},
	}
	for _, tt := range tests {
		got, err := DecodeProperties([]byte(tt.in))
		if err != nil {
			t.Errorf("DecodeProperties(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("DecodeProperties(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestDecodePropertiesMalformed(t *testing.T) {
	for _, in := range []string{"a", "a\x02", "\x011\x02", "a\x011\x012\x02", "ok\x01v\x02bad"} {
		if _, err := DecodeProperties([]byte(in)); !errors.Is(err, ErrMalformedProperties) {
			t.Errorf("DecodeProperties(%q) error = %v, want ErrMalformedProperties", in, err)
		}
	}
}

func TestValidateProperties(t *testing.T) {
	tests := []struct {
		props map[string]string
		ok    bool
	}{
		{nil, true},
		{map[string]string{"k": "v", "e": ""}, true},
		{map[string]string{"": "v"}, false},
		{map[string]string{"k\x01": "v"}, false},
		{map[string]string{"k\x02": "v"}, false},
		{map[string]string{"k": "v\x01"}, false},
		{map[string]string{"k": "v\x02w"}, false},
	}
	for _, tt := range tests {
		err := ValidateProperties(tt.props)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateProperties(%q) = %v, want ok=%v", tt.props, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrBadProperty) {
			t.Errorf("ValidateProperties(%q) = %v, want ErrBadProperty", tt.props, err)
		}
	}
}

func TestCheckPropertiesTooLong(t *testing.T) {
	// 32765 bytes of value + key "k" + 2 separators = 32768, one too many.
	props := map[string]string{"k": strings.Repeat("v", MaxPropertiesLen-2)}
	if _, err := checkProperties(props); !errors.Is(err, ErrPropertiesTooLong) {
		t.Errorf("checkProperties(32768 bytes) = %v, want ErrPropertiesTooLong", err)
	}
	props["k"] = props["k"][1:]
	if n, err := checkProperties(props); err != nil || n != MaxPropertiesLen {
		t.Errorf("checkProperties(32767 bytes) = %d, %v, want %d, nil", n, err, MaxPropertiesLen)
	}
}
