package filter

import (
	"fmt"
	"testing"
)

// outcome is the three-valued result of an expression, or ERR where
// RocketMQ's evaluation throws.
func outcome(t *testing.T, expr string, props Map) string {
	t.Helper()
	e, err := Compile(expr)
	if err != nil {
		t.Fatalf("Compile(%q) = %v", expr, err)
	}
	v := e.root.eval(props)
	switch v.k {
	case kBool:
		if v.truth() {
			return "TRUE"
		}
		return "FALSE"
	case kNull:
		return "NULL"
	case kErr:
		return "ERR"
	}
	return fmt.Sprintf("non-boolean %v", v)
}

type evalCase struct {
	expr  string
	props Map
	want  string // TRUE, FALSE, NULL or ERR
}

func runEval(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		got := outcome(t, tc.expr, tc.props)
		if got != tc.want {
			t.Errorf("%q on %v = %s, want %s", tc.expr, tc.props, got, tc.want)
		}
		e, _ := Compile(tc.expr)
		if m := e.Matches(tc.props); m != (tc.want == "TRUE") {
			t.Errorf("%q on %v: Matches = %v, outcome %s", tc.expr, tc.props, m, got)
		}
	}
}

// Cases of RocketMQ's ExpressionTest
// (filter/src/test/java/org/apache/rocketmq/filter/ExpressionTest.java)
// whose properties are strings, as a broker's always are. The Java
// test's eval treats null as false, so its FALSE is FALSE or NULL here.
func TestEvalRocketMQExpressionTest(t *testing.T) {
	const and = "a=3 and b<>4 And c>5 AND d<=4"
	const or = "a=3 or b<>4 Or c>5 OR d<=4"
	runEval(t, []evalCase{
		// testContains_StartsWith_EndsWith_* and the NOT variants
		{"value contains 'x'", Map{"value": "axb"}, "TRUE"},
		{"value startswith 'ax'", Map{"value": "axb"}, "TRUE"},
		{"value endswith 'xb'", Map{"value": "axb"}, "TRUE"},
		{"value not contains 'x'", Map{"value": "axb"}, "FALSE"},
		{"value not startswith 'ax'", Map{"value": "axb"}, "FALSE"},
		{"value not endswith 'xb'", Map{"value": "axb"}, "FALSE"},
		{"value contains 'x'", Map{"value": "abb"}, "FALSE"},
		{"value startswith 'x'", Map{"value": "abb"}, "FALSE"},
		{"value endswith 'x'", Map{"value": "abb"}, "FALSE"},
		{"value not contains 'x'", Map{"value": "abb"}, "TRUE"},
		{"value not startswith 'x'", Map{"value": "abb"}, "TRUE"},
		{"value not endswith 'x'", Map{"value": "abb"}, "TRUE"},
		{"value contains ''", Map{"value": "axb"}, "FALSE"},
		{"value startswith ''", Map{"value": "axb"}, "FALSE"},
		{"value endswith ''", Map{"value": "axb"}, "FALSE"},
		{"value not contains ''", Map{"value": "axb"}, "FALSE"},
		{"value not startswith ''", Map{"value": "axb"}, "FALSE"},
		{"value not endswith ''", Map{"value": "axb"}, "FALSE"},
		{"value contains 'x'", nil, "FALSE"},
		{"value not contains 'x'", nil, "FALSE"},
		{"value not startswith 'x'", nil, "FALSE"},
		{"value not endswith 'x'", nil, "FALSE"},
		{"'axb' contains 'x'", nil, "TRUE"},
		{"'axb' startswith 'ax'", nil, "TRUE"},
		{"'axb' endswith 'xb'", nil, "TRUE"},
		{"'axb' not contains 'x'", nil, "FALSE"},
		{"'axb' not contains 'u'", nil, "TRUE"},
		{"'axb' not startswith 'u'", nil, "TRUE"},
		{"'axb' not endswith 'u'", nil, "TRUE"},
		{"'axb' contains ''", nil, "FALSE"},
		{"'axb' not endswith ''", nil, "FALSE"},
		{"' ' contains ' '", nil, "TRUE"},
		{"' ' startswith ' '", nil, "TRUE"},
		{"' ' not endswith ' '", nil, "FALSE"},
		{"'axb' contains '.'", nil, "FALSE"},
		{"'axb' not startswith '.'", nil, "TRUE"},
		{`'s' contains '\'`, nil, "FALSE"},
		// testContainsAllInOne and friends, b as a string
		{"a not in ('4', '4', '5') and b between 3 and 10 and c not contains 'axbc'", Map{"a": "3", "b": "3", "c": "axbdc"}, "TRUE"},
		{"a not in ('4', '4', '5') and b between 3 and 10 and c not endswith 'axbc'", Map{"a": "3", "b": "3", "c": "axbdc"}, "TRUE"},
		// testEvaluate_stringHasString
		{"TAGS is not null and TAGS='''''tag'''''", Map{"TAGS": "''tag''"}, "TRUE"},
		// testEvaluate_stringCompare: RocketMQ throws
		{"a between up and low", Map{"a": "3.14"}, "NULL"},
		{"a between up and low", Map{"a": "3.14", "up": "up", "low": "low"}, "ERR"},
		{"key is not null and key between 0 and 100", Map{"key": "con"}, "ERR"},
		{"a between 0 and 100", Map{"a": "abc"}, "ERR"},
		{"a=b", Map{"a": "3.14", "b": "3.14"}, "TRUE"},
		{"a<>b", Map{"a": "3.14", "b": "3.14"}, "FALSE"},
		{"a<>b", Map{"a": "3.14", "b": "3.141"}, "TRUE"},
		// testEvaluate_exponent, _floatNumber, _twoVariable(Gt)
		{"a > 3.1E10", Map{"a": "3.1415E10"}, "TRUE"},
		{"a > 3.14", Map{"a": "3.1415"}, "TRUE"},
		{"a > b", Map{"a": "10", "b": "20"}, "FALSE"},
		{"a > b", Map{"a": "20", "b": "10"}, "TRUE"},
		// testEvaluate_nullOr, _boolean, _equal
		{"a is null OR a='hello'", nil, "TRUE"},
		{"a is null OR a='hello'", Map{"a": "hello"}, "TRUE"},
		{"a is null OR a='hello'", Map{"a": "abc"}, "FALSE"},
		{"a=TRUE OR b=FALSE", Map{"a": "true", "b": "false"}, "TRUE"},
		{"a=TRUE OR b=FALSE", Map{"a": "false", "b": "true"}, "FALSE"},
		{"a is not null and a='hello'", Map{"a": "hello"}, "TRUE"},
		{"a is not null and a='hello'", nil, "FALSE"},
		// testEvaluate_andTrue/_andFalse (string variant), _orTrue/_orFalse
		{and, Map{"a": "3", "b": "5", "c": "6", "d": "1"}, "TRUE"},
		{and, Map{"a": "4", "b": "5", "c": "6", "d": "1"}, "FALSE"},
		{or, Map{"a": "3"}, "TRUE"},
		{or, Map{"a": "4", "b": "5"}, "TRUE"},
		{or, Map{"a": "4", "b": "4", "c": "6"}, "TRUE"},
		{or, Map{"a": "4", "b": "4", "c": "3", "d": "2"}, "TRUE"},
		{or, Map{"a": "4", "b": "4", "c": "3", "d": "10"}, "FALSE"},
		// testEvaluate_in*/notIn*, between*/notBetween*, isNull*/isNotNull*
		{"a in ('3', '4', '5')", Map{"a": "3"}, "TRUE"},
		{"a in ('3', '4', '5')", Map{"a": "5"}, "TRUE"},
		{"a in ('3', '4', '5')", Map{"a": "8"}, "FALSE"},
		{"a not in ('3', '4', '5')", Map{"a": "8"}, "TRUE"},
		{"a not in ('3', '4', '5')", Map{"a": "4"}, "FALSE"},
		{"a between 2 and 10", Map{"a": "2"}, "TRUE"},
		{"a between 2 and 10", Map{"a": "10"}, "TRUE"},
		{"a between 2 and 10", Map{"a": "3"}, "TRUE"},
		{"a between 2 and 10", Map{"a": "1"}, "FALSE"},
		{"a between 2 and 10", Map{"a": "11"}, "FALSE"},
		{"a not between 2 and 10", Map{"a": "1"}, "TRUE"},
		{"a not between 2 and 10", Map{"a": "11"}, "TRUE"},
		{"a not between 2 and 10", Map{"a": "2"}, "FALSE"},
		{"a not between 2 and 10", Map{"a": "10"}, "FALSE"},
		{"a is null", Map{"abc": "2"}, "TRUE"},
		{"a is null", Map{"a": "2"}, "FALSE"},
		{"a is not null", Map{"a": "2"}, "TRUE"},
		{"a is not null", Map{"abc": "2"}, "FALSE"},
	})
}

func TestEvalOperators(t *testing.T) {
	p := Map{"s": "x", "n": "7", "f": "2.5", "e": "", "TAGS": "tagA"}
	runEval(t, []evalCase{
		{"n > 5", p, "TRUE"}, {"n > 7", p, "FALSE"},
		{"n >= 7", p, "TRUE"}, {"n >= 8", p, "FALSE"},
		{"n < 8", p, "TRUE"}, {"n < 7", p, "FALSE"},
		{"n <= 7", p, "TRUE"}, {"n <= 6", p, "FALSE"},
		{"n = 7", p, "TRUE"}, {"n = 8", p, "FALSE"},
		{"n <> 8", p, "TRUE"}, {"n <> 7", p, "FALSE"},
		{"s = 'x'", p, "TRUE"}, {"s <> 'x'", p, "FALSE"}, {"s = 'X'", p, "FALSE"},
		{"e = ''", p, "TRUE"}, {"e IS NULL", p, "FALSE"},
		{"n BETWEEN 7 AND 7", p, "TRUE"}, {"n NOT BETWEEN 7 AND 7", p, "FALSE"},
		{"TAGS IN ('tagA', 'tagB')", p, "TRUE"}, {"TAGS NOT IN ('tagA')", p, "FALSE"},
		{"TAGS IN ('taga')", p, "FALSE"},
		{"TAGS CONTAINS 'gA'", p, "TRUE"}, {"TAGS STARTSWITH 'tag'", p, "TRUE"},
		{"TAGS ENDSWITH 'A'", p, "TRUE"}, {"TAGS NOT ENDSWITH 'B'", p, "TRUE"},
		{"s IS NOT NULL", p, "TRUE"}, {"missing IS NOT NULL", p, "FALSE"},
		{"NOT (n > 5)", p, "FALSE"}, {"NOT (n > 8)", p, "TRUE"},
		{"n > 5 AND s = 'x'", p, "TRUE"}, {"n > 5 AND s = 'y'", p, "FALSE"},
		{"n > 8 OR s = 'x'", p, "TRUE"}, {"n > 8 OR s = 'y'", p, "FALSE"},
		{"(n > 8 OR s = 'x') AND (f > 2.0)", p, "TRUE"},
		{"n > 8 OR s = 'x' AND f > 3.0", p, "FALSE"}, // AND binds tighter
		{"TRUE", p, "TRUE"}, {"FALSE", p, "FALSE"}, {"NULL", p, "NULL"},
		{"a = 1 -- trailing comment\n", Map{"a": "1"}, "TRUE"},
		{"/* x */ a = /**/ 1", Map{"a": "1"}, "TRUE"},
		{"a = --1", Map{"a": "1"}, "TRUE"},
		{"a = -1", Map{"a": "-1"}, "TRUE"},
		{"a > +1", Map{"a": "2"}, "TRUE"},
		{"a = 'it''s'", Map{"a": "it's"}, "TRUE"},
		{"a IN ('it''s')", Map{"a": "it's"}, "TRUE"},
		{"a = 'NUL\x00'", Map{"a": "NUL\x00"}, "TRUE"},
		{"a = 'ünï'", Map{"a": "ünï"}, "TRUE"},
	})
}

func TestEvalLongInList(t *testing.T) {
	e, err := Compile("a IN ('0','1','2','3','4','5','6','7','8','9') AND b NOT IN ('0','1','2','3','4','5','6','7','8','9')")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"3", "x", true}, {"9", "10", true}, {"10", "x", false}, {"3", "3", false}} {
		if got := e.Matches(Map{"a": tc.a, "b": tc.b}); got != tc.want {
			t.Errorf("a=%q b=%q: %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestEvalKeywordsIgnoreCase(t *testing.T) {
	p := Map{"a": "5", "TAGS": "t"}
	for _, expr := range []string{
		"a = 5 AND TAGS IN ('t') AND x IS NULL AND NOT (a BETWEEN 6 AND 7) OR FALSE",
		"a = 5 and TAGS in ('t') and x is null and not (a between 6 and 7) or false",
		"a = 5 AnD TAGS iN ('t') aNd x iS nUlL aNd NoT (a BeTwEeN 6 aNd 7) Or FaLsE",
	} {
		if outcome(t, expr, p) != "TRUE" {
			t.Errorf("%q does not match", expr)
		}
	}
	// identifiers keep their case
	runEval(t, []evalCase{{"tags = 't'", p, "NULL"}, {"A = 5", p, "NULL"}})
}

func TestEvalNull(t *testing.T) {
	p := Map{"x": "1"}
	runEval(t, []evalCase{
		{"m > 1", p, "NULL"}, {"m >= 1", p, "NULL"}, {"m < 1", p, "NULL"}, {"1 < m", p, "NULL"},
		{"m = 1", p, "NULL"}, {"m <> 1", p, "NULL"}, {"m = 'x'", p, "NULL"},
		{"m BETWEEN 1 AND 2", p, "NULL"}, {"m NOT BETWEEN 1 AND 2", p, "NULL"},
		{"m IN ('1')", p, "NULL"}, {"m NOT IN ('1')", p, "NULL"},
		{"m IS NULL", p, "TRUE"}, {"m IS NOT NULL", p, "FALSE"},
		{"NOT (m = 1)", p, "NULL"},
		// three-valued AND and OR
		{"m = 1 AND x = 1", p, "NULL"}, {"m = 1 AND x = 2", p, "FALSE"},
		{"x = 2 AND m = 1", p, "FALSE"}, {"m = 1 OR x = 1", p, "TRUE"},
		{"m = 1 OR x = 2", p, "NULL"}, {"NULL AND FALSE", p, "FALSE"},
		{"NULL OR TRUE", p, "TRUE"}, {"NULL AND TRUE", p, "NULL"}, {"NOT NULL", p, "NULL"},
		// RocketMQ's asymmetric = : x = NULL-valued is FALSE, NULL = NULL is TRUE
		{"x = m", p, "FALSE"}, {"x <> m", p, "TRUE"},
		{"m = x", p, "NULL"}, {"m <> x", p, "NULL"},
		{"m = n", p, "TRUE"}, {"m <> n", p, "FALSE"},
		{"-x = -m", p, "TRUE"}, // -'1' is NULL
		{"-x IS NULL", p, "TRUE"}, {"5 IS NULL", p, "FALSE"},
		{"(m > 1) IS NULL", p, "TRUE"}, {"NULL IS NULL", p, "TRUE"},
		// a bare property is FALSE when present, NULL when missing
		{"x", p, "FALSE"}, {"m", p, "NULL"}, {"NOT x", p, "TRUE"}, {"NOT m", p, "NULL"},
		{"x OR x = '1'", p, "TRUE"}, {"x AND x = '1'", p, "FALSE"},
	})
}

// The coercion rules of ComparisonExpression.__compare as they apply to
// string properties.
func TestEvalCoercion(t *testing.T) {
	runEval(t, []evalCase{
		// an int literal parses the property with Integer.valueOf
		{"a = 5", Map{"a": "5"}, "TRUE"},
		{"a = 5", Map{"a": "+5"}, "TRUE"},
		{"a = 5", Map{"a": "05"}, "TRUE"},
		{"a = -5", Map{"a": "-5"}, "TRUE"},
		{"a > 5", Map{"a": "5.5"}, "ERR"},
		{"a > 5", Map{"a": " 6"}, "ERR"},
		{"a > 5", Map{"a": ""}, "ERR"},
		{"a > 5", Map{"a": "abc"}, "ERR"},
		{"a = 5", Map{"a": "abc"}, "ERR"},
		{"a > 5", Map{"a": "3000000000"}, "ERR"}, // beyond int
		{"a > 5", Map{"a": "2147483647"}, "TRUE"},
		{"a < 5", Map{"a": "-2147483648"}, "TRUE"},
		{"a > 5", Map{"a": "٧"}, "TRUE"}, // Java takes any BMP digit
		{"a = 12", Map{"a": "１２"}, "TRUE"},
		// a long literal uses Long.valueOf
		{"a > 2147483648", Map{"a": "3000000000"}, "TRUE"},
		{"a = 5000000000", Map{"a": "5000000000"}, "TRUE"},
		{"a > 2147483648", Map{"a": "99999999999999999999"}, "ERR"},
		{"a = -2147483648", Map{"a": "-2147483648"}, "TRUE"}, // a negated long
		// a float literal uses Double.valueOf
		{"a > 5.0", Map{"a": "6"}, "TRUE"},
		{"a > 5.0", Map{"a": " 6 "}, "TRUE"},
		{"a > 5.0", Map{"a": "5.5e0"}, "TRUE"},
		{"a > 5.0", Map{"a": "0x1.8p3"}, "TRUE"},
		{"a > 5.0", Map{"a": "6d"}, "TRUE"},
		{"a > 5.0", Map{"a": "Infinity"}, "TRUE"},
		{"a < 5.0", Map{"a": "-Infinity"}, "TRUE"},
		{"a > 5.0", Map{"a": "NaN"}, "TRUE"}, // Double.compareTo: NaN is above all
		{"a = 5.0", Map{"a": "NaN"}, "FALSE"},
		{"a > 5.0", Map{"a": "inf"}, "ERR"},
		{"a > 5.0", Map{"a": "1_0"}, "ERR"},
		{"a > 5.0", Map{"a": "1e999"}, "TRUE"},
		{"a = 5.0", Map{"a": "5"}, "TRUE"},
		{"a = 5", Map{"a": "5.0"}, "ERR"},
		// two properties ordered: both Double.valueOf; = compares strings
		{"a > b", Map{"a": "1e1", "b": "9"}, "TRUE"},
		{"a >= b", Map{"a": "NaN", "b": "NaN"}, "TRUE"},
		{"a > b", Map{"a": "x", "b": "1"}, "ERR"},
		{"a = b", Map{"a": "1", "b": "1.0"}, "FALSE"},
		// numbers widen
		{"5 = 5.0", nil, "TRUE"}, {"5 < 5000000000", nil, "TRUE"},
		{"5000000000 > 5.5", nil, "TRUE"}, {"-(5) = -5", nil, "TRUE"},
		// booleans: Boolean.valueOf on the property; -1 across types
		{"a = TRUE", Map{"a": "TRUE"}, "TRUE"},
		{"a = TRUE", Map{"a": "yes"}, "FALSE"},
		{"a = FALSE", Map{"a": "yes"}, "TRUE"},
		{"a <> TRUE", Map{"a": "true"}, "FALSE"},
		{"'x' = TRUE", nil, "FALSE"},
		{"5 = TRUE", nil, "FALSE"},
		{"(a = 1) = 5", Map{"a": "1"}, "FALSE"},
		{"(a = 1) = TRUE", Map{"a": "1"}, "TRUE"},
		{"a = 1 = TRUE", Map{"a": "1"}, "TRUE"},
		// a Boolean on the left of a string: ClassCastException in RocketMQ
		{"TRUE = a", Map{"a": "true"}, "ERR"},
		{"(a = 1) = b", Map{"a": "1", "b": "true"}, "ERR"},
		{"NOT a = 'x'", Map{"a": "x"}, "ERR"}, // (NOT a) = 'x'
		{"NOT a = 1", Map{"a": "1"}, "FALSE"}, // (NOT a) = 1: Boolean vs int is -1
		// unary minus of a non-number is NULL
		{"a > -b", Map{"a": "1", "b": "1"}, "NULL"},
		{"a = -'x'", Map{"a": "x"}, "FALSE"},
		{"a CONTAINS 'x'", Map{"a": "x"}, "TRUE"},
		{"-a CONTAINS 'x'", Map{"a": "x"}, "FALSE"},
		{"(a = 1) CONTAINS 'x'", Map{"a": "1"}, "FALSE"},
	})
}

// A failing comparison ends the evaluation; operands are evaluated in
// RocketMQ's order, so an earlier deciding operand hides it.
func TestEvalFailureOrder(t *testing.T) {
	p := Map{"a": "abc", "b": "x"}
	runEval(t, []evalCase{
		{"b = 'x' OR a > 5", p, "TRUE"},
		{"a > 5 OR b = 'x'", p, "ERR"},
		{"b = 'y' AND a > 5", p, "FALSE"},
		{"a > 5 AND b = 'y'", p, "ERR"},
		{"NOT (a > 5)", p, "ERR"},
		{"(a > 5) IS NULL", p, "ERR"},
		{"m > a", p, "NULL"}, // NULL left: the right side is not looked at
		{"m = (a > 5)", p, "ERR"},
		{"a > 5 = m", p, "ERR"},
		{"a NOT BETWEEN 1 AND 2", p, "ERR"},
		{"a BETWEEN 1 AND 2 OR TRUE", p, "ERR"},
		{"b CONTAINS '' AND a > 5", p, "FALSE"},
		{"b CONTAINS '' OR a > 5", p, "ERR"},
	})
}

func TestMatchesNilProperties(t *testing.T) {
	e, err := Compile("a IS NULL")
	if err != nil {
		t.Fatal(err)
	}
	if !e.Matches(nil) || !e.Matches(Map(nil)) {
		t.Error("a IS NULL does not match a message without properties")
	}
}
