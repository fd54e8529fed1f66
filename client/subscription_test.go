package client

import (
	"errors"
	"slices"
	"testing"
)

// TestParseSubscription: tags are trimmed and kept once, "" and "*" mean
// every tag, and an expression without a tag is an ErrInvalidOption.
func TestParseSubscription(t *testing.T) {
	for _, c := range []struct {
		expr     string
		wantExpr string
		tags     []string
	}{
		{"", "*", nil},
		{" * ", "*", nil},
		{"A", "A", []string{"A"}},
		{" A || B ||A|| ", "A || B ||A||", []string{"A", "B"}},
	} {
		s, err := parseSubscription("T", c.expr)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		if s.expr != c.wantExpr || !slices.Equal(s.tags, c.tags) {
			t.Errorf("%q: expr %q tags %q, want %q %q", c.expr, s.expr, s.tags, c.wantExpr, c.tags)
		}
	}
	for _, bad := range []struct{ topic, expr string }{{"T", "||"}, {"T", " || || "}, {"", "*"}} {
		if _, err := parseSubscription(bad.topic, bad.expr); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("topic %q expr %q: %v, want ErrInvalidOption", bad.topic, bad.expr, err)
		}
	}
}
