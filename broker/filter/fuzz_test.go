package filter

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// fuzzValues are property values that exercise every conversion path.
var fuzzValues = []string{
	"", "0", "-1", "5", "+7", "1.5", "1e400", "NaN", "-Infinity", "0x1p3",
	"2147483648", "-9223372036854775808", "99999999999999999999", "true",
	"TRUE", "abc", " 5 ", "٣", "\x00", "'",
}

func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		"", " ", "a", "a = 1", "a > 5 AND TAGS IN ('x','y') AND b IS NOT NULL",
		strings.Repeat("(", 100) + "a" + strings.Repeat(")", 100),
		strings.Repeat("NOT ", 70) + "a",
		"a = " + strings.Repeat("-", 200) + "1",
		"a" + strings.Repeat(" IS NULL", 70),
		"a IN (" + strings.Repeat("'x',", 1100) + "'y')",
		"a = 'unterminated", "a = 'x''", "'", "''", "'''",
		"a = '\x00'", "\x00", "a\x00= 1", "a = 1 /* open", "-- only a comment",
		"a = 1 -- comment\n", "/**/a/**/=/**/1",
		"a > " + strings.Repeat("9", 400), "a > 0." + strings.Repeat("0", 400) + "1",
		"a > 1e400", "a > 1e-400", "a > 0.0", "a > 9223372036854775808",
		"a BETWEEN 10 AND 0", "a NOT BETWEEN 1 AND 2", "a NOT CONTAINS ''",
		"upper(a) = 'X'", "a = 1 b", "TRUE = a", "NOT a = 'x'", "a = b",
		"a STARTSWITH 'x' OR b ENDSWITH 'y'", "a <> 007", "5L = 5", ".5e+3 < a",
		"\xff\xfe", "ü = 1",
	} {
		f.Add(seed, "5")
	}
	f.Fuzz(func(t *testing.T, expr, val string) {
		e, err := Compile(expr)
		if err != nil {
			checkSyntaxError(t, expr, err)
			return
		}
		if e.String() != expr {
			t.Fatalf("String() = %q, want %q", e.String(), expr)
		}
		names := propertyNames(e.root, nil)
		for i := 0; i <= len(fuzzValues); i++ {
			props := Map{}
			for j, name := range names {
				if i < len(fuzzValues) {
					props[name] = fuzzValues[(i+j)%len(fuzzValues)]
				} else {
					props[name] = val
				}
			}
			v := e.root.eval(props)
			if v.k != kBool && v.k != kNull && v.k != kErr {
				t.Fatalf("%q on %v evaluates to a non-boolean %v", expr, props, v)
			}
			if e.Matches(props) != v.truth() {
				t.Fatalf("%q on %v: Matches disagrees with its evaluation %v", expr, props, v)
			}
		}
		e.Matches(nil)
	})
}

func checkSyntaxError(t *testing.T, expr string, err error) {
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Compile(%q) = %T %v, want a *SyntaxError", expr, err, err)
	}
	if se.Pos < 1 || se.Pos > len(expr)+1 && !errors.Is(err, ErrLimit) {
		t.Fatalf("Compile(%q): position %d outside 1..%d", expr, se.Pos, len(expr)+1)
	}
	if errors.Is(err, ErrSyntax) == errors.Is(err, ErrLimit) {
		t.Fatalf("Compile(%q): %v must match exactly one of ErrSyntax and ErrLimit", expr, err)
	}
}

// propertyNames lists the properties a compiled tree reads.
func propertyNames(n node, names []string) []string {
	switch n := n.(type) {
	case *propNode:
		return append(names, n.name)
	case *inNode:
		return append(names, n.name)
	case *negNode:
		return propertyNames(n.x, names)
	case *notNode:
		return propertyNames(n.x, names)
	case *castNode:
		return propertyNames(n.x, names)
	case *isNullNode:
		return propertyNames(n.x, names)
	case *strOpNode:
		return propertyNames(n.x, names)
	case *eqNode:
		return propertyNames(n.r, propertyNames(n.l, names))
	case *cmpNode:
		return propertyNames(n.r, propertyNames(n.l, names))
	case *andNode:
		for _, x := range n.xs {
			names = propertyNames(x, names)
		}
	case *orNode:
		for _, x := range n.xs {
			names = propertyNames(x, names)
		}
	}
	return names
}

var plainDecimal = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?$`)
var plainInteger = regexp.MustCompile(`^[+-]?[0-9]+$`)

// FuzzJavaNumbers checks the Java number parsers never panic and agree
// with strconv on the inputs where Java's and Go's syntax coincide.
func FuzzJavaNumbers(f *testing.F) {
	for _, seed := range append(fuzzValues, "1.", ".5", "1e", "1_0", "0x1.8p1f", "-0", strings.Repeat("9", 500)) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, dok := parseJavaDouble(s)
		if plainDecimal.MatchString(s) {
			want, err := strconv.ParseFloat(s, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				t.Fatalf("strconv refuses %q: %v", s, err)
			}
			if !dok || d != want {
				t.Fatalf("parseJavaDouble(%q) = %v, %v, want %v", s, d, dok, want)
			}
		}
		i, iok := parseJavaInteger(s, math.MinInt64, math.MaxInt64)
		if plainInteger.MatchString(s) {
			want, err := strconv.ParseInt(s, 10, 64)
			if iok != (err == nil) || iok && i != want {
				t.Fatalf("parseJavaInteger(%q) = %d, %v, want %d, %v", s, i, iok, want, err)
			}
		}
		if i32, ok := parseJavaInteger(s, math.MinInt32, math.MaxInt32); ok && (i32 < math.MinInt32 || i32 > math.MaxInt32 || !iok || i32 != i) {
			t.Fatalf("parseJavaInteger(%q) as int = %d, as long = %d, %v", s, i32, i, iok)
		}
	})
}
