package filter

import (
	"errors"
	"strings"
	"testing"
)

// The valid selectors of RocketMQ's ParserTest
// (filter/src/test/java/org/apache/rocketmq/filter/ParserTest.java) come
// first; `a <= now` there is the property "now".
func TestCompileValid(t *testing.T) {
	for _, expr := range []string{
		"a=3 and b<>4 And c>5 AND d<=4",
		"a=3  and    b<>4 And c>5 AND d<=4",
		"a=3 or b<>4 Or c>5 OR d<=4",
		"a in ('3', '4', '5')",
		"(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))",
		"(a between 2 and 10) AND (b not between 6 and 9)",
		"a is null",
		"a is not null",
		"a <= now",
		"a=3 and b contains 'xxx' and c not contains 'xxx'",

		"TRUE", "FALSE", "NULL", "a", "NOT a", "(a)", "((a = 1))",
		"a >= 1 AND a < 2 OR a <= 3 AND a > 4",
		"TAGS IN ('x','y')",
		"a startswith 'x' or b endswith 'y' or c not startswith '' or d not endswith 'z'",
		"'axb' contains 'x'",
		"a = 'it''s'", "a = ''", "a = ''''",
		"a > -5", "a > +5", "a > - - 5", "a > -a", "a = -'x'",
		"a = 9223372036854775807", "a = 2147483648", "a = 5L", "a = 10l",
		"a > 1.5", "a > 5.", "a > .5", "a > 5E10", "a > 5.5e-3", "a > 1.E+2", "a > 4.9e-324",
		"a = TRUE", "a = false", "TRUE = TRUE", "TRUE = FALSE", "'x' = TRUE", "5 = TRUE",
		"a = b", "a > b", "5 < a", "a = 1 = TRUE", "a IS NULL IS NOT NULL",
		"a between 1 and 1", "a between 1 and 2.5", "a between -10 and -20", "a not between 10 and 0",
		"a IS NULL = TRUE", "NULL IS NULL", "(a > 1) = (b > 2)",
		"nOt a = 1", "a NoT iN ('x')", "a bEtWeEn 1 AnD 2", "x Is NoT nUlL", "a cOnTaInS 'x'",
		"$a_1 = 'x'", "_ = 'x'", "note = 1", "index = 1", "isx = 1", "truex = 1",
		"a = 1 -- comment\n", "a = 1 -- comment\r", "/* c */ a /**/ = /* ** / */ 1",
		"a\t=\r\n1\f", "a = --5", "a = 'NUL\x00inside'", "a = 'line\nbreak'",
		"a = 'ünïcödé'",
	} {
		e, err := Compile(expr)
		if err != nil {
			t.Errorf("Compile(%q) = %v", expr, err)
			continue
		}
		if e.String() != expr {
			t.Errorf("String() = %q, want %q", e.String(), expr)
		}
	}
}

func TestCompileInvalid(t *testing.T) {
	for _, tc := range []struct {
		expr string
		pos  int
		msg  string // a part of the message
	}{
		// ParserTest.testParse_invalid, _decimalOverFlow, _illegalBetween
		{"a and between 2 and 10", 7, "expected an operand"},
		{"a > 100000000000000000000000", 5, "does not fit in a long"},
		{" a between 10 and 0", 12, "lower bound 10"},

		{"", 1, "expected an operand, found end of expression"},
		{"   ", 4, "end of expression"},
		{"a =", 4, "end of expression"},
		{"a = 1 b = 2", 7, `unexpected "b"`},
		{"a = 1)", 6, `unexpected ")"`},
		{"(a = 1", 7, `expected ")"`},
		{"a = 'x", 5, "unterminated string"},
		{"a = 'x''", 5, "unterminated string"},
		{"a = 1 /* x", 7, "unterminated /* comment"},
		{"a = 1 /", 7, `unexpected character "/"`},
		{"a == 1", 4, `expected an operand, found "="`},
		{"a != 1", 3, `unexpected character "!"`},
		{"a = \x00", 5, `unexpected character "\x00"`},
		{"a = é", 5, `unexpected character "é"`},
		{"a = \xff", 5, `unexpected character "\xff"`},
		{"a = 007", 6, `unexpected "0"`},
		{"a = 0L", 6, `unexpected "L"`},
		{"a = 1e", 6, `unexpected "e"`},
		{"a = .", 5, `unexpected character "."`},
		{"upper(a) = 'X'", 1, `unknown function "upper"`},
		{"a = lower(b)", 5, `unknown function "lower"`},
		{"a LIKE 'x%'", 3, `unexpected "LIKE"`},
		{"a > 'x'", 5, "'x' cannot be compared"},
		{"'x' < a", 1, "'x' cannot be compared"},
		{"a > TRUE", 5, "TRUE cannot be compared"},
		{"a > NULL", 5, "NULL cannot be compared"},
		{"a > 1 > 2", 1, "the condition a > 1 cannot be compared"},
		{"a > (b = 1)", 5, "the condition (b = 1)"},
		{"a between 'a' and 'b'", 11, "'a' cannot be compared"},
		{"a between 1 and NULL", 3, "cannot be NULL"},
		{"a between 2.5 and 2", 11, "lower bound 2.5"},
		{"a between 'x' and TRUE", 11, "cannot be compared"},
		{"a = NULL", 5, "NULL cannot be compared with = or <>"},
		{"NULL <> a", 1, "NULL cannot be compared"},
		{"TRUE = 5", 1, "TRUE cannot be compared with 5"},
		{"FALSE = 'x'", 1, "FALSE cannot be compared"},
		{"'a' IN ('a')", 1, "IN needs a property"},
		{"-a IN ('a')", 1, "IN needs a property"},
		{"NOT a IN ('a')", 1, "IN needs a property"},
		{"a IN ()", 7, "expected a string literal"},
		{"a IN (1)", 7, "expected a string literal"},
		{"a IN ('x',)", 11, "expected a string literal"},
		{"a IN ('x' 'y')", 11, `expected "," or ")"`},
		{"a IN 'x'", 6, `expected "(" of IN`},
		{"a contains x", 12, "expected a string literal"},
		{"a contains 123", 12, "expected a string literal"},
		{"'axb' contains ", 16, "expected a string literal"},
		{"a not x", 7, "after NOT"},
		{"a = 1 NOT", 10, "after NOT"},
		{"a IS 1", 6, "expected NULL"},
		{"a IS NOT 1", 10, "expected NULL"},
		{"a between 1 or 2", 13, "expected AND of BETWEEN"},
		{"5", 1, "5 is not a condition"},
		{"'x' AND a = 1", 1, "'x' is not a condition"},
		{"a = 1 OR 5", 10, "5 is not a condition"},
		{"NOT 5", 5, "not a condition"},
		{"-a", 1, "-a is not a condition"},
		{"a > 0.0", 5, "below the smallest positive double"},
		{"a > 1e-400", 5, "below the smallest positive double"},
		{"a > 1e400", 5, "larger than the largest double"},
		{"a > 9223372036854775808", 5, "does not fit in a long"},
		{"a > -9223372036854775808", 6, "does not fit in a long"},
	} {
		_, err := Compile(tc.expr)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Compile(%q) = %v, want a *SyntaxError", tc.expr, err)
			continue
		}
		if se.Pos != tc.pos || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("Compile(%q) = %v, want position %d and %q", tc.expr, err, tc.pos, tc.msg)
		}
		if !errors.Is(err, ErrSyntax) || errors.Is(err, ErrLimit) {
			t.Errorf("Compile(%q): %v does not match ErrSyntax alone", tc.expr, err)
		}
	}
}

func TestSyntaxErrorFormat(t *testing.T) {
	_, err := Compile("a = 1 b")
	if got, want := err.Error(), `filter: position 7: unexpected "b" after a complete expression`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestCompileLimits(t *testing.T) {
	inList := func(n int) string {
		return "a IN (" + strings.TrimSuffix(strings.Repeat("'x',", n), ",") + ")"
	}
	for _, tc := range []struct {
		name string
		expr string
		ok   bool
	}{
		{"longest", "a = '" + strings.Repeat("x", MaxLen-6) + "'", true},
		{"too long", "a = '" + strings.Repeat("x", MaxLen-5) + "'", false},
		{"parentheses at the limit", strings.Repeat("(", MaxDepth) + "a" + strings.Repeat(")", MaxDepth), true},
		{"parentheses too deep", strings.Repeat("(", MaxDepth+1) + "a" + strings.Repeat(")", MaxDepth+1), false},
		{"NOT too deep", strings.Repeat("NOT ", MaxDepth+1) + "a", false},
		{"minus too deep", "a = " + strings.Repeat("-", 2*MaxDepth+2) + "5", false},
		{"parentheses very deep", strings.Repeat("(", MaxLen/2), false},
		{"chain at the limit", "a" + strings.Repeat(" IS NULL", MaxDepth), true},
		{"chain too long", "a" + strings.Repeat(" IS NULL", MaxDepth+1), false},
		{"IN at the limit", inList(MaxInItems), true},
		{"IN too long", inList(MaxInItems + 1), false},
		{"too many nodes", strings.TrimSuffix(strings.Repeat("a = 1 OR ", MaxNodes/3+1), " OR "), false},
		{"nodes at the limit", strings.TrimSuffix(strings.Repeat("a = 1 OR ", (MaxNodes-1)/3), " OR "), true},
	} {
		_, err := Compile(tc.expr)
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var se *SyntaxError
		if !errors.Is(err, ErrLimit) || !errors.As(err, &se) || errors.Is(err, ErrSyntax) {
			t.Errorf("%s: err = %v, want a *SyntaxError matching ErrLimit", tc.name, err)
		}
	}
}
