package filter

import (
	"errors"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// The parsers here accept exactly the strings Java's Integer.valueOf,
// Long.valueOf and Double.valueOf accept, because RocketMQ converts
// property values with them; a string Java refuses makes the comparison
// fail. None of them allocates on success.

// parseJavaInteger is Integer.parseInt/Long.parseLong in base 10 for the
// range [lo, hi]: an optional sign, then one or more decimal digits, no
// white space. Like Java it takes any BMP decimal digit (Unicode Nd), not
// just ASCII ones.
func parseJavaInteger(s string, lo, hi int64) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
		if s == "" {
			return 0, false
		}
	}
	limit := uint64(hi)
	if neg {
		limit = uint64(-(lo + 1)) + 1
	}
	var mag uint64
	for i := 0; i < len(s); {
		d, size := int(s[i]-'0'), 1
		if d > 9 { // not an ASCII digit (a byte below '0' wraps too)
			if d, size = javaDigit(s[i:]); d < 0 {
				return 0, false
			}
		}
		i += size
		if mag > (limit-uint64(d))/10 {
			return 0, false
		}
		mag = mag*10 + uint64(d)
	}
	if neg {
		return -int64(mag), true // 2^63 wraps to MinInt64, as wanted
	}
	return int64(mag), true
}

// javaDigit is Character.digit(c, 10) for the character at the start of
// s, and that character's length in bytes; -1 if it is not a digit. A
// character beyond the BMP is a surrogate pair in Java, never a digit.
func javaDigit(s string) (digit, size int) {
	if c := s[0]; c < utf8.RuneSelf {
		if isDigit(c) {
			return int(c - '0'), 1
		}
		return -1, 1
	}
	r, size := utf8.DecodeRuneInString(s)
	if r > 0xFFFF || !unicode.Is(unicode.Nd, r) {
		return -1, size
	}
	// Unicode encodes decimal digits in contiguous runs from 0 to 9, so
	// every range of the Nd table starts at a zero.
	for _, rg := range unicode.Nd.R16 {
		if uint16(r) >= rg.Lo && uint16(r) <= rg.Hi {
			return int(uint16(r)-rg.Lo) % 10, size
		}
	}
	return -1, size
}

// parseJavaDouble is Double.valueOf: leading and trailing bytes up to
// U+0020 are trimmed; then an optional sign and "NaN", "Infinity", a
// decimal (digits with an optional point, at least one digit, an optional
// exponent) or a hexadecimal float (0x, hex digits, a mandatory binary
// exponent), each but the first two with an optional f/F/d/D suffix.
// Out-of-range values become ±Inf or ±0 as in Java.
func parseJavaDouble(s string) (float64, bool) {
	s = trimJava(s)
	body := s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	var n int
	if len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		n = scanHexFloat(body)
	} else {
		n = scanDecFloat(body)
	}
	if n < 0 {
		return 0, false
	}
	if n < len(body) {
		if n != len(body)-1 || !isFloatSuffix(body[n]) {
			return 0, false
		}
		s = s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// trimJava is String.trim: it drops bytes <= ' ' at both ends.
func trimJava(s string) string {
	for s != "" && s[0] <= ' ' {
		s = s[1:]
	}
	for s != "" && s[len(s)-1] <= ' ' {
		s = s[:len(s)-1]
	}
	return s
}

func isFloatSuffix(c byte) bool { return c == 'f' || c == 'F' || c == 'd' || c == 'D' }

// scanDecFloat returns the length of the decimal float at the start of s,
// or -1 if there is none.
func scanDecFloat(s string) int {
	i, n := scanRun(s, 0, isDigit)
	if i < len(s) && s[i] == '.' {
		var m int
		i, m = scanRun(s, i+1, isDigit)
		n += m
	}
	if n == 0 {
		return -1
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		return scanExponent(s, i+1)
	}
	return i
}

// scanHexFloat returns the length of the hexadecimal float at the start of
// s (which starts with 0x), or -1 if there is none.
func scanHexFloat(s string) int {
	i, n := scanRun(s, 2, isHexDigit)
	if i < len(s) && s[i] == '.' {
		var m int
		i, m = scanRun(s, i+1, isHexDigit)
		n += m
	}
	if n == 0 || i >= len(s) || (s[i] != 'p' && s[i] != 'P') {
		return -1
	}
	return scanExponent(s, i+1)
}

// scanExponent returns the end of an optionally signed run of digits
// starting at i, or -1 if there are no digits.
func scanExponent(s string, i int) int {
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	end, n := scanRun(s, i, isDigit)
	if n == 0 {
		return -1
	}
	return end
}

// scanRun returns the end of the run of bytes satisfying ok from i and
// the run's length.
func scanRun(s string, i int, ok func(byte) bool) (end, n int) {
	start := i
	for i < len(s) && ok(s[i]) {
		i++
	}
	return i, i - start
}

func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
