package filter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The parser is a recursive descent over the productions of RocketMQ's
// SelectorParser.jj, one method per production, lowest precedence first:
//
//	or         = and { OR and }
//	and        = equality { AND equality }
//	equality   = comparison { "=" comparison | "<>" comparison
//	                        | IS NULL | IS NOT NULL }
//	comparison = unary { (">" | ">=" | "<" | "<=") unary
//	                   | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) string
//	                   | [NOT] BETWEEN unary AND unary
//	                   | [NOT] IN "(" string { "," string } ")" }
//	unary      = "+" unary | "-" unary | NOT unary | primary
//	primary    = literal | identifier | "(" or ")"
//
// Errors are raised as a bailout panic and turned back into an error by
// parse, which keeps every production free of error plumbing.

// bailout carries a *SyntaxError up the parser's stack.
type bailout struct{ err *SyntaxError }

// failf aborts the parse with a syntax error at byte offset pos.
func failf(pos int, format string, args ...any) {
	panic(bailout{&SyntaxError{Pos: pos + 1, Msg: fmt.Sprintf(format, args...), Err: ErrSyntax}})
}

// limitf aborts the parse with a limit error at byte offset pos.
func limitf(pos int, format string, args ...any) {
	panic(bailout{&SyntaxError{Pos: pos + 1, Msg: fmt.Sprintf(format, args...), Err: ErrLimit}})
}

// exprClass is what RocketMQ's compile-time checks ask of an operand: is
// it a ConstantExpression, a PropertyExpression, a BooleanExpression, or
// none of these (a negation).
type exprClass uint8

const (
	clsOther exprClass = iota
	clsConst
	clsProp
	clsBool
)

// expr is a parsed operand with what the checks need to know about it.
type expr struct {
	n          node
	class      exprClass
	start, end int // byte offsets of its source text
}

// constValue returns the literal's value if e is a literal.
func (e expr) constValue() (value, bool) {
	if e.class != clsConst {
		return value{}, false
	}
	return e.n.(*constNode).v, true
}

// isBool reports whether e is one of RocketMQ's BooleanExpressions; the
// literals TRUE, FALSE and NULL are.
func (e expr) isBool() bool {
	v, ok := e.constValue()
	return e.class == clsBool || ok && (v.k == kBool || v.k == kNull)
}

type parser struct {
	lx      lexer
	ahead   [2]token
	nahead  int
	lastEnd int // end of the last token taken
	depth   int
	nodes   int
}

// parse compiles src to the root of its tree.
func parse(src string) (root node, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			root, err = nil, b.err
		}
	}()
	p := &parser{lx: lexer{src: src}}
	e := p.parseOr()
	// RocketMQ's parser stops after the first complete expression and
	// ignores the rest; here the rest is an error.
	if t := p.peek(0); t.kind != tEOF {
		failf(t.pos, "unexpected %s after a complete expression", t.describe())
	}
	return p.asBool(e).n, nil
}

// peek returns the token i (0 or 1) places ahead without taking it.
func (p *parser) peek(i int) token {
	for p.nahead <= i {
		p.ahead[p.nahead] = p.lx.next()
		p.nahead++
	}
	return p.ahead[i]
}

// take consumes the next token.
func (p *parser) take() token {
	t := p.peek(0)
	p.ahead[0] = p.ahead[1]
	p.nahead--
	p.lastEnd = t.pos + len(t.text)
	return t
}

// expect takes the next token, which must be of kind k.
func (p *parser) expect(k tokKind, what string) token {
	if t := p.peek(0); t.kind != k {
		failf(t.pos, "expected %s, found %s", what, t.describe())
	}
	return p.take()
}

// enter counts one level of nesting at byte offset pos.
func (p *parser) enter(pos int) {
	if p.depth++; p.depth > MaxDepth {
		limitf(pos, "nested deeper than %d levels", MaxDepth)
	}
}

// build counts a node and wraps it as an operand spanning start to the
// last token taken.
func (p *parser) build(n node, class exprClass, start int) expr {
	if p.nodes++; p.nodes > MaxNodes {
		limitf(start, "more than %d operators and operands", MaxNodes)
	}
	return expr{n: n, class: class, start: start, end: p.lastEnd}
}

// text returns e's source, shortened for an error message.
func (p *parser) text(e expr) string {
	s := p.lx.src[e.start:e.end]
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func (p *parser) parseOr() expr {
	return p.parseChain(tOr, p.parseAnd, func(xs []node) node { return &orNode{xs: xs} })
}

func (p *parser) parseAnd() expr {
	return p.parseChain(tAnd, p.parseEquality, func(xs []node) node { return &andNode{xs: xs} })
}

// parseChain parses operand { op operand } into one n-ary node.
func (p *parser) parseChain(op tokKind, operand func() expr, mk func([]node) node) expr {
	first := operand()
	if p.peek(0).kind != op {
		return first
	}
	xs := []node{p.asBool(first).n}
	for p.peek(0).kind == op {
		p.take()
		xs = append(xs, p.asBool(operand()).n)
	}
	return p.build(mk(xs), clsBool, first.start)
}

func (p *parser) parseEquality() expr {
	left := p.parseComparison()
	links := 0
	defer func() { p.depth -= links }()
	for {
		t := p.peek(0)
		if t.kind != tEq && t.kind != tNe && t.kind != tIs {
			return left
		}
		p.take()
		p.enter(t.pos)
		links++
		if t.kind == tIs {
			left = p.isNull(left)
			continue
		}
		left = p.equal(left, p.parseComparison(), t.kind == tNe)
	}
}

// isNull parses what follows IS.
func (p *parser) isNull(left expr) expr {
	not := false
	if p.peek(0).kind == tNot {
		p.take()
		not = true
	}
	p.expect(tNull, "NULL")
	e := p.build(&isNullNode{x: left.n}, clsBool, left.start)
	if not {
		e = p.build(&notNode{x: e.n}, clsBool, left.start)
	}
	return e
}

func (p *parser) parseComparison() expr {
	left := p.parseUnary()
	links := 0
	defer func() { p.depth -= links }()
	for {
		t := p.peek(0)
		op, not := t.kind, false
		if op == tNot {
			op, not = p.peek(1).kind, true
			if !negatable(op) {
				failf(p.peek(1).pos, "expected BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT, found %s", p.peek(1).describe())
			}
		}
		if !negatable(op) && !ordering(op) {
			return left
		}
		p.take()
		if not {
			p.take()
		}
		p.enter(t.pos)
		links++
		left = p.comparison(left, op, not, t.pos)
	}
}

func negatable(k tokKind) bool {
	return k == tBetween || k == tIn || k == tContains || k == tStartsWith || k == tEndsWith
}

func ordering(k tokKind) bool { return k == tGt || k == tGe || k == tLt || k == tLe }

func cmpOpOf(k tokKind) cmpOp {
	switch k {
	case tGt:
		return opGt
	case tGe:
		return opGe
	case tLt:
		return opLt
	}
	return opLe
}

func strOpOf(k tokKind) strOp {
	switch k {
	case tContains:
		return opContains
	case tStartsWith:
		return opStartsWith
	}
	return opEndsWith
}

// comparison parses the right side of one comparison operator, op (and
// NOT) already taken at byte offset pos.
func (p *parser) comparison(left expr, op tokKind, not bool, pos int) expr {
	switch op {
	case tGt, tGe, tLt, tLe:
		return p.ordered(cmpOpOf(op), left, p.parseUnary())
	case tBetween:
		low := p.parseUnary()
		p.expect(tAnd, "AND of BETWEEN")
		return p.between(left, low, p.parseUnary(), not, pos)
	case tIn:
		return p.in(left, p.inList(), not)
	}
	lit := unquote(p.expect(tString, "a string literal").text)
	return p.build(&strOpNode{op: strOpOf(op), not: not, x: left.n, lit: lit}, clsBool, left.start)
}

// inList parses "(" string { "," string } ")".
func (p *parser) inList() []string {
	p.expect(tLParen, `"(" of IN`)
	var list []string
	for {
		t := p.expect(tString, "a string literal")
		if len(list) == MaxInItems {
			limitf(t.pos, "IN list longer than %d items", MaxInItems)
		}
		list = append(list, unquote(t.text))
		if p.peek(0).kind != tComma {
			p.expect(tRParen, `"," or ")"`)
			return list
		}
		p.take()
	}
}

func (p *parser) parseUnary() expr {
	t := p.peek(0)
	if t.kind != tPlus && t.kind != tMinus && t.kind != tNot {
		return p.parsePrimary()
	}
	p.take()
	p.enter(t.pos)
	x := p.parseUnary()
	p.depth--
	switch t.kind {
	case tPlus:
		x.start = t.pos
		return x
	case tMinus:
		return p.negate(x, t.pos)
	}
	return p.build(&notNode{x: p.asBool(x).n}, clsBool, t.pos)
}

// negate builds unary minus. A negated literal is folded, but it is no
// longer a literal to the checks: RocketMQ sees a UnaryExpression there.
func (p *parser) negate(x expr, pos int) expr {
	if v, ok := x.constValue(); ok {
		return p.build(&constNode{v: negate(v)}, clsOther, pos)
	}
	return p.build(&negNode{x: x.n}, clsOther, pos)
}

func (p *parser) parsePrimary() expr {
	t := p.take()
	switch t.kind {
	case tString:
		return p.literal(value{k: kString, s: unquote(t.text)}, t)
	case tInt:
		return p.literal(intLiteral(t), t)
	case tFloat:
		return p.literal(floatLiteral(t), t)
	case tTrue, tFalse:
		return p.literal(boolValue(t.kind == tTrue), t)
	case tNull:
		return p.literal(vNull, t)
	case tID:
		if p.peek(0).kind == tLParen {
			failf(t.pos, "unknown function %q", t.text)
		}
		return p.build(&propNode{name: t.text}, clsProp, t.pos)
	case tLParen:
		p.enter(t.pos)
		e := p.parseOr()
		p.expect(tRParen, `")"`)
		p.depth--
		e.start, e.end = t.pos, p.lastEnd
		return e
	}
	failf(t.pos, "expected an operand, found %s", t.describe())
	panic("unreachable")
}

func (p *parser) literal(v value, t token) expr {
	return p.build(&constNode{v: v}, clsConst, t.pos)
}

// intLiteral converts a DECIMAL_LITERAL as RocketMQ does: a long (the
// l/L suffix changes nothing), narrowed to an int when it fits.
func intLiteral(t token) value {
	text := strings.TrimRight(t.text, "lL")
	i, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		failf(t.pos, "integer %s does not fit in a long", text)
	}
	if i >= math.MinInt32 && i <= math.MaxInt32 {
		return value{k: kInt, i: i}
	}
	return value{k: kLong, i: i}
}

// floatLiteral converts a FLOATING_POINT_LITERAL to a double. RocketMQ
// refuses one above the largest double and, because it compares with
// Double.MIN_VALUE (the smallest positive double), also zero and any
// literal that rounds to it: `a > 0.0` does not compile there, nor here.
func floatLiteral(t token) value {
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil || math.IsInf(f, 0) {
		failf(t.pos, "floating-point literal %s is larger than the largest double", t.describe())
	}
	if f < math.SmallestNonzeroFloat64 {
		failf(t.pos, "floating-point literal %s is below the smallest positive double; RocketMQ refuses it (write 0 for zero)", t.describe())
	}
	return doubleValue(f)
}
