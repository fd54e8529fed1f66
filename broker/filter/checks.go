package filter

// The compile-time checks RocketMQ makes while it builds an expression
// (SelectorParser.asBooleanExpression and the create* factories of
// ComparisonExpression). They refuse operands that could never compare,
// and report where the operand starts.

// asBool makes e usable as a condition: a BooleanExpression as it is, a
// bare property through a boolean cast, anything else is refused.
func (p *parser) asBool(e expr) expr {
	switch {
	case e.isBool():
		return e
	case e.class == clsProp:
		return p.build(&castNode{x: e.n}, clsBool, e.start)
	}
	failf(e.start, "%s is not a condition: it does not evaluate to TRUE or FALSE", p.text(e))
	panic("unreachable")
}

// ordered builds left op right after checkLessThanOperand on both sides:
// a literal must be a number, and a condition cannot be ordered.
func (p *parser) ordered(op cmpOp, left, right expr) expr {
	p.checkOrderable(left)
	p.checkOrderable(right)
	return p.build(&cmpNode{op: op, l: left.n, r: right.n}, clsBool, left.start)
}

func (p *parser) checkOrderable(e expr) {
	if v, ok := e.constValue(); ok && !v.isNumber() {
		failf(e.start, "%s cannot be compared with <, <=, > or >=: only numbers can", p.text(e))
	}
	if e.isBool() {
		failf(e.start, "the condition %s cannot be compared with <, <=, > or >=", p.text(e))
	}
}

// equal builds left = right (or left <> right, as NOT of it) after
// checkEqualOperand on both sides (no NULL literal) and
// checkEqualOperandCompatability (a TRUE or FALSE literal on the left
// needs a boolean literal on the right if the right is a literal).
func (p *parser) equal(left, right expr, ne bool) expr {
	for _, e := range [...]expr{left, right} {
		if v, ok := e.constValue(); ok && v.k == kNull {
			failf(e.start, "NULL cannot be compared with = or <>; use IS NULL or IS NOT NULL")
		}
	}
	if right.class == clsConst && left.isBool() && left.class == clsConst && !right.isBool() {
		failf(left.start, "%s cannot be compared with %s", p.text(left), p.text(right))
	}
	e := p.build(&eqNode{l: left.n, r: right.n}, clsBool, left.start)
	if ne {
		e = p.build(&notNode{x: e.n}, clsBool, left.start)
	}
	return e
}

// between builds v BETWEEN low AND high as v >= low AND v <= high, and
// v NOT BETWEEN low AND high as v < low OR v > high. Like RocketMQ it
// refuses literal bounds that are NULL or out of order, for BETWEEN only.
func (p *parser) between(v, low, high expr, not bool, pos int) expr {
	if !not {
		p.checkBounds(low, high, pos)
	}
	if not {
		lt, gt := p.ordered(opLt, v, low), p.ordered(opGt, v, high)
		return p.build(&orNode{xs: []node{lt.n, gt.n}}, clsBool, v.start)
	}
	ge, le := p.ordered(opGe, v, low), p.ordered(opLe, v, high)
	return p.build(&andNode{xs: []node{ge.n, le.n}}, clsBool, v.start)
}

func (p *parser) checkBounds(low, high expr, pos int) {
	lv, lok := low.constValue()
	hv, hok := high.constValue()
	if !lok || !hok {
		return
	}
	if lv.k == kNull || hv.k == kNull {
		failf(pos, "the bounds of BETWEEN cannot be NULL")
	}
	c, ok := compareValues(hv, lv)
	if !ok {
		failf(low.start, "the bounds %s and %s of BETWEEN cannot be compared", p.text(low), p.text(high))
	}
	if c < 0 {
		failf(low.start, "the lower bound %s of BETWEEN is greater than the upper bound %s", p.text(low), p.text(high))
	}
}

// in builds left [NOT] IN (list); RocketMQ wants a property on the left.
func (p *parser) in(left expr, list []string, not bool) expr {
	if left.class != clsProp {
		failf(left.start, "IN needs a property on its left, not %s", p.text(left))
	}
	return p.build(newInNode(left.n.(*propNode).name, not, list), clsBool, left.start)
}
