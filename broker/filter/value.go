package filter

import (
	"math"
	"strings"
)

// kind is the Java type a RocketMQ expression value has at run time.
// Integer and Long stay apart because RocketMQ converts a property to the
// type of the constant it is compared with: `a > 5` parses the property as
// an int (Integer.valueOf), `a > 5000000000` as a long.
type kind uint8

const (
	kNull   kind = iota // SQL NULL (Java null)
	kBool               // Boolean
	kInt                // Integer: a literal in int32 range, i holds it
	kLong               // Long, i holds it
	kDouble             // Double, f holds it
	kString             // String, s holds it
	kErr                // evaluation failed (RocketMQ throws): no match
)

// value is one evaluation result; it is passed by value so that Matches
// does not allocate. It is kept to 32 bytes so that the compiler holds it
// in registers: a larger struct is copied through memory, and the narrow
// stores and wide loads of those copies stall store forwarding (a bare
// TRUE took 17 ns to evaluate instead of 2).
type value struct {
	k kind
	i int64 // kInt, kLong: the number; kDouble: its bits; kBool: 1 for TRUE
	s string
}

func doubleValue(f float64) value { return value{k: kDouble, i: int64(math.Float64bits(f))} }

// float returns a kDouble's number.
func (v value) float() float64 { return math.Float64frombits(uint64(v.i)) }

// truth reports whether v is TRUE.
func (v value) truth() bool { return v.k == kBool && v.i != 0 }

// falsity reports whether v is FALSE.
func (v value) falsity() bool { return v.k == kBool && v.i == 0 }

var (
	vNull  = value{k: kNull}
	vTrue  = value{k: kBool, i: 1}
	vFalse = value{k: kBool}
	vErr   = value{k: kErr}
)

func boolValue(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

func (v value) isNumber() bool { return v.k == kInt || v.k == kLong || v.k == kDouble }

// asDouble widens a number to Double as Java's Number.doubleValue does.
func (v value) asDouble() value {
	if v.k == kDouble {
		return v
	}
	return doubleValue(float64(v.i))
}

// compareValues orders two non-NULL values the way RocketMQ's
// ComparisonExpression.__compare does with string conversion on (it always
// is): a String meeting a number is parsed as that number's type, a String
// meeting a Boolean is Boolean.valueOf, numbers widen (int → long →
// double), and any other pair of different types compares as -1. ok is
// false where RocketMQ throws: the string does not parse, or a Boolean on
// the left meets a String (a ClassCastException in RocketMQ).
func compareValues(l, r value) (c int, ok bool) {
	if l.k != r.k {
		var same bool
		if l, r, same, ok = promote(l, r); !ok || !same {
			return -1, ok
		}
	}
	return compareSame(l, r), true
}

// promote converts l or r so that both have one type. same is false when
// RocketMQ gives up on the pair and answers -1.
func promote(l, r value) (lp, rp value, same, ok bool) {
	switch l.k {
	case kBool:
		return l, r, false, r.k != kString
	case kInt, kLong:
		switch {
		case r.k == kDouble:
			return l.asDouble(), r, true, true
		case r.k == kInt || r.k == kLong:
			l.k, r.k = kLong, kLong
			return l, r, true, true
		case r.k == kString:
			r, ok = parseAs(r.s, l.k)
			return l, r, true, ok
		}
	case kDouble:
		switch {
		case r.k == kInt || r.k == kLong:
			return l, r.asDouble(), true, true
		case r.k == kString:
			r, ok = parseAs(r.s, kDouble)
			return l, r, true, ok
		}
	case kString:
		if r.k == kBool {
			return boolValue(strings.EqualFold(l.s, "true")), r, true, true
		}
		if r.isNumber() {
			l, ok = parseAs(l.s, r.k)
			return l, r, true, ok
		}
	}
	return l, r, false, true
}

// parseAs converts a string as Integer.valueOf, Long.valueOf or
// Double.valueOf would.
func parseAs(s string, k kind) (value, bool) {
	switch k {
	case kInt:
		i, ok := parseJavaInteger(s, math.MinInt32, math.MaxInt32)
		return value{k: kInt, i: i}, ok
	case kLong:
		i, ok := parseJavaInteger(s, math.MinInt64, math.MaxInt64)
		return value{k: kLong, i: i}, ok
	default:
		f, ok := parseJavaDouble(s)
		return doubleValue(f), ok
	}
}

// compareSame is compareTo of two values of one type.
func compareSame(l, r value) int {
	switch l.k {
	case kBool:
		return cmpInt(l.i, r.i)
	case kInt, kLong:
		return cmpInt(l.i, r.i)
	case kDouble:
		return compareDouble(l.float(), r.float())
	case kString:
		// Java orders UTF-16 code units; only equality is ever asked of
		// two strings at run time, and there the two orders agree.
		return strings.Compare(l.s, r.s)
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareDouble is Java's Double.compare: NaN equals itself and is above
// +Inf, and -0.0 is below 0.0.
func compareDouble(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := int64(math.Float64bits(canonNaN(a))), int64(math.Float64bits(canonNaN(b)))
	return cmpInt(ab, bb)
}

// canonNaN maps every NaN to Java's canonical one (doubleToLongBits).
func canonNaN(f float64) float64 {
	if f != f {
		return math.Float64frombits(0x7ff8000000000000)
	}
	return f
}

// negate is RocketMQ's unary minus: numbers keep their type (an int
// wraps as Java's does), anything else becomes NULL.
func negate(v value) value {
	switch v.k {
	case kInt:
		return value{k: kInt, i: int64(-int32(v.i))}
	case kLong:
		return value{k: kLong, i: -v.i}
	case kDouble:
		return doubleValue(-v.float())
	case kErr:
		return v
	}
	return vNull
}
