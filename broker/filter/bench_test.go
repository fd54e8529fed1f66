package filter

import (
	"strings"
	"testing"
)

// matchCases are the shapes Matches must evaluate without allocating.
var matchCases = []struct {
	name, expr string
	props      Map
}{
	{"typical", "a > 5 AND TAGS IN ('x','y') AND b IS NOT NULL", Map{"a": "7", "TAGS": "y", "b": "1", "c": "other"}},
	{"string", "TAGS = 'tagA' OR TAGS = 'tagB'", Map{"TAGS": "tagB"}},
	{"double", "price BETWEEN 9.5 AND 100.25", Map{"price": "19.99"}},
	{"long", "ts > 1700000000000", Map{"ts": "1700000000001"}},
	{"two properties", "a > b", Map{"a": "2.5", "b": "1e-3"}},
	{"in set", "region IN (" + strings.Repeat("'r',", 40) + "'eu-west-1')", Map{"region": "eu-west-1"}},
	{"contains", "k CONTAINS 'needle' AND NOT (k STARTSWITH 'x')", Map{"k": "haystack-needle-haystack"}},
	{"missing", "a > 5 OR b = 'x' OR c IS NULL", Map{}},
	{"failing", "a > 5 OR b = 'x'", Map{"a": "not a number", "b": "x"}},
}

func TestMatchesDoesNotAllocate(t *testing.T) {
	for _, tc := range matchCases {
		e, err := Compile(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var p Properties = tc.props
		if n := testing.AllocsPerRun(100, func() { e.Matches(p) }); n != 0 {
			t.Errorf("%s: %v allocations per Matches, want 0", tc.name, n)
		}
	}
}

func BenchmarkMatches(b *testing.B) {
	for _, tc := range matchCases {
		b.Run(tc.name, func(b *testing.B) {
			e, err := Compile(tc.expr)
			if err != nil {
				b.Fatal(err)
			}
			var p Properties = tc.props
			b.ReportAllocs()
			for b.Loop() {
				e.Matches(p)
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	const expr = "a > 5 AND TAGS IN ('x','y') AND b IS NOT NULL"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(expr); err != nil {
			b.Fatal(err)
		}
	}
}
