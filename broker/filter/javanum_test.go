package filter

import (
	"math"
	"testing"
	"unicode"
)

// What Java's Integer.parseInt / Long.parseLong answer for these strings.
func TestParseJavaInteger(t *testing.T) {
	for _, tc := range []struct {
		s      string
		lo, hi int64
		want   int64
		ok     bool
	}{
		{"0", math.MinInt32, math.MaxInt32, 0, true},
		{"-0", math.MinInt32, math.MaxInt32, 0, true},
		{"+7", math.MinInt32, math.MaxInt32, 7, true},
		{"007", math.MinInt32, math.MaxInt32, 7, true},
		{"2147483647", math.MinInt32, math.MaxInt32, math.MaxInt32, true},
		{"2147483648", math.MinInt32, math.MaxInt32, 0, false},
		{"-2147483648", math.MinInt32, math.MaxInt32, math.MinInt32, true},
		{"-2147483649", math.MinInt32, math.MaxInt32, 0, false},
		{"9223372036854775807", math.MinInt64, math.MaxInt64, math.MaxInt64, true},
		{"9223372036854775808", math.MinInt64, math.MaxInt64, 0, false},
		{"-9223372036854775808", math.MinInt64, math.MaxInt64, math.MinInt64, true},
		{"-9223372036854775809", math.MinInt64, math.MaxInt64, 0, false},
		{"99999999999999999999999", math.MinInt64, math.MaxInt64, 0, false},
		{"", math.MinInt64, math.MaxInt64, 0, false},
		{"-", math.MinInt64, math.MaxInt64, 0, false},
		{"+", math.MinInt64, math.MaxInt64, 0, false},
		{"--1", math.MinInt64, math.MaxInt64, 0, false},
		{" 1", math.MinInt64, math.MaxInt64, 0, false},
		{"1 ", math.MinInt64, math.MaxInt64, 0, false},
		{"1.0", math.MinInt64, math.MaxInt64, 0, false},
		{"1e3", math.MinInt64, math.MaxInt64, 0, false},
		{"0x10", math.MinInt64, math.MaxInt64, 0, false},
		{"1_000", math.MinInt64, math.MaxInt64, 0, false},
		{"٤٢", math.MinInt64, math.MaxInt64, 42, true},   // Arabic-Indic
		{"-１０", math.MinInt64, math.MaxInt64, -10, true}, // fullwidth
		{"४2", math.MinInt64, math.MaxInt64, 42, true},   // Devanagari and ASCII
		{"𝟏", math.MinInt64, math.MaxInt64, 0, false},    // outside the BMP: a surrogate pair in Java
		{"Ⅻ", math.MinInt64, math.MaxInt64, 0, false},    // a number, not a decimal digit
		{"\xff", math.MinInt64, math.MaxInt64, 0, false},
	} {
		got, ok := parseJavaInteger(tc.s, tc.lo, tc.hi)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("parseJavaInteger(%q) = %d, %v, want %d, %v", tc.s, got, ok, tc.want, tc.ok)
		}
	}
}

// javaDigit relies on every range of unicode.Nd starting at a zero digit.
func TestNdRangesAreWholeRunsOfTen(t *testing.T) {
	for _, rg := range unicode.Nd.R16 {
		if rg.Stride != 1 || (int(rg.Hi)-int(rg.Lo)+1)%10 != 0 {
			t.Errorf("Nd range %U-%U (stride %d) is not whole runs of ten", rg.Lo, rg.Hi, rg.Stride)
		}
	}
}

// What Java's Double.valueOf answers for these strings.
func TestParseJavaDouble(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		s    string
		want float64
		ok   bool
	}{
		{"1", 1, true}, {"-1", -1, true}, {"+1", 1, true},
		{"1.", 1, true}, {".5", 0.5, true}, {"-.5", -0.5, true},
		{"1.5e3", 1500, true}, {"1.5E+3", 1500, true}, {"15e-1", 1.5, true},
		{"1.5f", 1.5, true}, {"1.5F", 1.5, true}, {"2d", 2, true}, {"2.D", 2, true},
		{" \t\n2\r\x00", 2, true},
		{"NaN", nan, true}, {"-NaN", nan, true}, {"+Infinity", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true}, {"Infinity", math.Inf(1), true},
		{"0x1p3", 8, true}, {"0X1.8P1", 3, true}, {"-0x.8p1", -1, true}, {"0x1p-1d", 0.5, true},
		{"0x1.p1", 2, true},
		{"1e400", math.Inf(1), true}, {"-1e400", math.Inf(-1), true}, {"1e-400", 0, true},
		{"0x1p99999", math.Inf(1), true},
		{"00012.50", 12.5, true},

		{"", 0, false}, {"   ", 0, false}, {".", 0, false}, {"+", 0, false}, {"-.", 0, false},
		{"e5", 0, false}, {".e5", 0, false}, {"1e", 0, false}, {"1e+", 0, false},
		{"1.5ff", 0, false}, {"1f5", 0, false}, {"1.5 x", 0, false}, {"1,5", 0, false},
		{"nan", 0, false}, {"inf", 0, false}, {"infinity", 0, false}, {"Infinityf", 0, false},
		{"NaNd", 0, false}, {"++1", 0, false}, {"1_0", 0, false}, {"0x1_0p0", 0, false},
		{"0x1", 0, false}, {"0x", 0, false}, {"0xp1", 0, false}, {"0x.p1", 0, false},
		{"0x1p", 0, false}, {"0x1pf", 0, false}, {"1e5.5", 0, false}, {"١", 0, false},
		{"\u00a01", 0, false}, // no-break space is not trimmed
	} {
		got, ok := parseJavaDouble(tc.s)
		same := got == tc.want || math.IsNaN(got) && math.IsNaN(tc.want)
		if ok != tc.ok || ok && !same {
			t.Errorf("parseJavaDouble(%q) = %v, %v, want %v, %v", tc.s, got, ok, tc.want, tc.ok)
		}
	}
}

// Double.compare orders -0.0 below 0.0 and NaN above everything.
func TestCompareDouble(t *testing.T) {
	nan, inf, negZero := math.NaN(), math.Inf(1), math.Copysign(0, -1)
	for _, tc := range []struct {
		a, b float64
		want int
	}{
		{1, 2, -1}, {2, 1, 1}, {1, 1, 0},
		{negZero, 0, -1}, {0, negZero, 1}, {negZero, negZero, 0},
		{nan, inf, 1}, {inf, nan, -1}, {nan, nan, 0}, {nan, math.Float64frombits(0x7ff0000000000001), 0},
	} {
		if got := compareDouble(tc.a, tc.b); got != tc.want {
			t.Errorf("compareDouble(%v, %v) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
