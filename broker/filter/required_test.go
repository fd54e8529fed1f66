package filter

import (
	"slices"
	"testing"
)

func TestRequiredValues(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string // nil: not pinned
	}{
		{"TAGS = 'a'", []string{"a"}},
		{"'a' = TAGS", []string{"a"}},
		{"TAGS IN ('a', 'b')", []string{"a", "b"}},
		{"TAGS IN ('a','b','c','d','e','f','g','h','i')", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}},
		{"TAGS = 'a' AND price > 5", []string{"a"}},
		{"price > 5 AND (TAGS = 'a' OR TAGS IN ('b'))", []string{"a", "b"}},
		{"TAGS IN ('a', 'b') AND TAGS = 'b'", []string{"b"}},
		{"TAGS = 'a' OR price > 5", nil},
		{"TAGS <> 'a'", nil},
		{"NOT (TAGS = 'a')", nil},
		{"TAGS NOT IN ('a')", nil},
		{"TAGS IS NULL", nil},
		{"TAGS = 1", nil},
		{"other = 'a'", nil},
		{"TAGS = 'a' = TRUE OR TAGS = 'b'", nil},
	} {
		e, err := Compile(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		got, ok := e.RequiredValues("TAGS")
		slices.Sort(got)
		if ok != (c.want != nil) || !slices.Equal(got, c.want) {
			t.Errorf("%s: RequiredValues = %v, %v; want %v", c.expr, got, ok, c.want)
		}
		// Whatever it says must hold: a message whose TAGS is outside the
		// set (or missing) never matches, whatever its other properties.
		if ok {
			for _, props := range []Map{{}, {"TAGS": "zzz", "price": "10"}, {"price": "10"}} {
				if e.Matches(props) {
					t.Errorf("%s matches %v, outside the required values %v", c.expr, props, got)
				}
			}
		}
	}
}
