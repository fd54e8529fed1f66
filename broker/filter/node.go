package filter

import "strings"

// node is one operator or operand of a compiled expression. eval follows
// the order in which RocketMQ's expression classes evaluate their operands,
// because that order decides whether a failing comparison (kErr) is
// reached at all.
type node interface {
	eval(p Properties) value
}

// constNode is a literal, or a negated literal folded at compile time.
type constNode struct{ v value }

func (n *constNode) eval(Properties) value { return n.v }

// propNode reads a property: a String, or NULL when the message lacks it.
type propNode struct{ name string }

func (n *propNode) eval(p Properties) value {
	s, ok := p.Get(n.name)
	if !ok {
		return vNull
	}
	return value{k: kString, s: s}
}

// negNode is unary minus of a non-literal operand.
type negNode struct{ x node }

func (n *negNode) eval(p Properties) value { return negate(n.x.eval(p)) }

// notNode is NOT: NULL stays NULL.
type notNode struct{ x node }

func (n *notNode) eval(p Properties) value {
	v := n.x.eval(p)
	if v.k == kBool {
		v.i = 1 - v.i
	}
	return v
}

// castNode makes a bare property usable as a condition, as RocketMQ's
// BooleanCast does: a present property is a String, which is FALSE.
type castNode struct{ x node }

func (n *castNode) eval(p Properties) value {
	v := n.x.eval(p)
	if v.k == kNull || v.k == kErr || v.k == kBool {
		return v
	}
	return vFalse
}

// andNode is a chain of AND: the first FALSE decides without evaluating
// the rest; otherwise any NULL makes the result NULL. A left-deep chain of
// RocketMQ's binary ANDs evaluates the same operands in the same order.
type andNode struct{ xs []node }

func (n *andNode) eval(p Properties) value {
	res := vTrue
	for _, x := range n.xs {
		switch v := x.eval(p); {
		case v.k == kErr:
			return v
		case v.falsity():
			return vFalse
		case v.k != kBool:
			res = vNull
		}
	}
	return res
}

// orNode is a chain of OR, the dual of andNode.
type orNode struct{ xs []node }

func (n *orNode) eval(p Properties) value {
	res := vFalse
	for _, x := range n.xs {
		switch v := x.eval(p); {
		case v.k == kErr:
			return v
		case v.truth():
			return vTrue
		case v.k != kBool:
			res = vNull
		}
	}
	return res
}

// eqNode is = (and, under a notNode, <>). Both sides are evaluated
// first. NULL = NULL is TRUE and x = NULL is FALSE, but NULL = x is NULL:
// RocketMQ's asymmetry, kept.
type eqNode struct{ l, r node }

func (n *eqNode) eval(p Properties) value {
	l := n.l.eval(p)
	if l.k == kErr {
		return l
	}
	r := n.r.eval(p)
	switch {
	case r.k == kErr:
		return r
	case l.k == kNull && r.k == kNull:
		return vTrue
	case l.k == kNull:
		return vNull
	case r.k == kNull:
		return vFalse
	}
	c, ok := compareValues(l, r)
	if !ok {
		return vErr
	}
	return boolValue(c == 0)
}

// isNullNode is IS NULL (IS NOT NULL is its notNode); never NULL itself.
type isNullNode struct{ x node }

func (n *isNullNode) eval(p Properties) value {
	v := n.x.eval(p)
	if v.k == kErr {
		return v
	}
	return boolValue(v.k == kNull)
}

// cmpOp is one of the ordering operators.
type cmpOp uint8

const (
	opGt cmpOp = iota
	opGe
	opLt
	opLe
)

func (op cmpOp) holds(c int) bool {
	switch op {
	case opGt:
		return c > 0
	case opGe:
		return c >= 0
	case opLt:
		return c < 0
	}
	return c <= 0
}

// cmpNode is >, >=, < or <=. A NULL left side makes it NULL before the
// right side is evaluated. Two strings (two properties) are both parsed as
// Double; any other pair goes through compareValues.
type cmpNode struct {
	op   cmpOp
	l, r node
}

func (n *cmpNode) eval(p Properties) value {
	l := n.l.eval(p)
	if l.k == kErr || l.k == kNull {
		return l
	}
	r := n.r.eval(p)
	if r.k == kErr || r.k == kNull {
		return r
	}
	if l.k == kString && r.k == kString {
		lf, lok := parseJavaDouble(l.s)
		rf, rok := parseJavaDouble(r.s)
		if !lok || !rok {
			return vErr
		}
		return boolValue(n.op.holds(compareDouble(lf, rf)))
	}
	c, ok := compareValues(l, r)
	if !ok {
		return vErr
	}
	return boolValue(n.op.holds(c))
}

// strOp is CONTAINS, STARTSWITH or ENDSWITH.
type strOp uint8

const (
	opContains strOp = iota
	opStartsWith
	opEndsWith
)

// strOpNode is [NOT] CONTAINS/STARTSWITH/ENDSWITH 'lit'. It is never NULL:
// an empty literal, a NULL or a non-string operand give FALSE, with or
// without NOT.
type strOpNode struct {
	op  strOp
	not bool
	x   node
	lit string
}

func (n *strOpNode) eval(p Properties) value {
	if n.lit == "" {
		return vFalse
	}
	v := n.x.eval(p)
	if v.k == kErr {
		return v
	}
	if v.k != kString {
		return vFalse
	}
	var hit bool
	switch n.op {
	case opContains:
		hit = strings.Contains(v.s, n.lit)
	case opStartsWith:
		hit = strings.HasPrefix(v.s, n.lit)
	default:
		hit = strings.HasSuffix(v.s, n.lit)
	}
	return boolValue(hit != n.not)
}

// inNode is prop [NOT] IN ('a', 'b', ...); NULL when the property is
// missing. Short lists are scanned, long ones looked up in a set.
type inNode struct {
	name string
	not  bool
	list []string
	set  map[string]struct{}
}

// inSetMin is the list length from which a set beats a linear scan.
const inSetMin = 8

func newInNode(name string, not bool, list []string) *inNode {
	n := &inNode{name: name, not: not}
	if len(list) < inSetMin {
		n.list = list
		return n
	}
	n.set = make(map[string]struct{}, len(list))
	for _, s := range list {
		n.set[s] = struct{}{}
	}
	return n
}

func (n *inNode) eval(p Properties) value {
	s, ok := p.Get(n.name)
	if !ok {
		return vNull
	}
	return boolValue(n.contains(s) != n.not)
}

func (n *inNode) contains(s string) bool {
	if n.set != nil {
		_, ok := n.set[s]
		return ok
	}
	for _, item := range n.list {
		if item == s {
			return true
		}
	}
	return false
}
