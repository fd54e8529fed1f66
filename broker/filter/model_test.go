package filter

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// A model of the documented semantics, over a generated subset of the
// language: conditions on properties combined with AND, OR and NOT. The
// property checks that any spelling of a condition (keyword case, white
// space, comments, redundant parentheses) compiles and evaluates to what
// the model says, which also pins operator precedence.

type mcond struct {
	op   string // and, or, not, cmp, eqs, eqn, in, isnull, between, contains
	kids []*mcond
	prop string
	cmp  string // >, >=, <, <= for cmp; = or <> for eqs and eqn
	n, m int    // literal, or BETWEEN bounds
	s    string // literal
	list []string
	not  bool
}

var (
	modelProps  = []string{"a", "b", "TAGS"}
	modelValues = []string{"1", "5", "-3", "05", "+5", "x", "y", "5.5", "", "2147483648", "it's"}
	modelWords  = []string{"x", "y", "it's", "5", ""}
)

func genCond(rt *rapid.T, depth int) *mcond {
	if depth > 0 && rapid.IntRange(0, 2).Draw(rt, "compound") > 0 {
		switch rapid.IntRange(0, 2).Draw(rt, "logic") {
		case 0:
			return &mcond{op: "not", kids: []*mcond{genCond(rt, depth-1)}}
		default:
			c := &mcond{op: rapid.SampledFrom([]string{"and", "or"}).Draw(rt, "andor")}
			for range rapid.IntRange(2, 4).Draw(rt, "arity") {
				c.kids = append(c.kids, genCond(rt, depth-1))
			}
			return c
		}
	}
	return genAtom(rt)
}

func genAtom(rt *rapid.T) *mcond {
	c := &mcond{prop: rapid.SampledFrom(modelProps).Draw(rt, "prop"), not: rapid.Bool().Draw(rt, "not")}
	c.op = rapid.SampledFrom([]string{"cmp", "eqs", "eqn", "in", "isnull", "between", "contains"}).Draw(rt, "atom")
	c.n = rapid.IntRange(-5, 10).Draw(rt, "n")
	switch c.op {
	case "cmp":
		c.cmp = rapid.SampledFrom([]string{">", ">=", "<", "<="}).Draw(rt, "cmp")
	case "eqs", "eqn":
		c.cmp = rapid.SampledFrom([]string{"=", "<>"}).Draw(rt, "eq")
		c.s = rapid.SampledFrom(modelWords).Draw(rt, "s")
	case "in":
		c.list = rapid.SliceOfN(rapid.SampledFrom(modelWords), 1, 10).Draw(rt, "list")
	case "between":
		c.m = c.n + rapid.IntRange(0, 6).Draw(rt, "width")
	case "contains":
		c.s = rapid.SampledFrom([]string{"x", "'", "5", "s"}).Draw(rt, "lit")
	}
	return c
}

// eval is the model: TRUE, FALSE, NULL or ERR.
func (c *mcond) eval(p Map) string {
	switch c.op {
	case "and", "or":
		return c.evalLogic(p)
	case "not":
		switch v := c.kids[0].eval(p); v {
		case "TRUE":
			return "FALSE"
		case "FALSE":
			return "TRUE"
		default:
			return v
		}
	}
	v, ok := p[c.prop]
	switch {
	case c.op == "isnull":
		return tri(!ok != c.not)
	case c.op == "contains" && !ok:
		return "FALSE"
	case c.op == "contains":
		return tri(strings.Contains(v, c.s) != c.not)
	case !ok:
		return "NULL"
	case c.op == "eqs":
		return tri((v == c.s) != (c.cmp == "<>"))
	case c.op == "in":
		return tri(slices.Contains(c.list, v) != c.not)
	}
	x, err := strconv.ParseInt(v, 10, 32) // Integer.valueOf on these values
	if err != nil {
		return "ERR"
	}
	n := int64(c.n)
	switch c.op {
	case "eqn":
		return tri((x == n) != (c.cmp == "<>"))
	case "between":
		return tri((x >= n && x <= int64(c.m)) != c.not)
	}
	return tri(map[string]bool{">": x > n, ">=": x >= n, "<": x < n, "<=": x <= n}[c.cmp])
}

func (c *mcond) evalLogic(p Map) string {
	stop, other := "FALSE", "TRUE"
	if c.op == "or" {
		stop, other = "TRUE", "FALSE"
	}
	res := other
	for _, k := range c.kids {
		switch v := k.eval(p); v {
		case "ERR", stop:
			return v
		case "NULL":
			res = "NULL"
		}
	}
	return res
}

func tri(b bool) string {
	if b {
		return "TRUE"
	}
	return "FALSE"
}

// style spells one rendering: keyword case, separators, extra parentheses.
type style struct{ rt *rapid.T }

func (s style) kw(word string) string {
	switch rapid.IntRange(0, 2).Draw(s.rt, "case") {
	case 0:
		return strings.ToLower(word)
	case 1:
		return word
	}
	b := []byte(word)
	for i := range b {
		if rapid.Bool().Draw(s.rt, "upper") {
			b[i] = strings.ToLower(word[i : i+1])[0]
		}
	}
	return string(b)
}

func (s style) sp() string {
	return rapid.SampledFrom([]string{" ", "  ", "\t", "\n", " /* c */ ", " -- c\n", "\r\n"}).Draw(s.rt, "sp")
}

func (s style) paren(text string) string {
	if rapid.IntRange(0, 4).Draw(s.rt, "paren") == 0 {
		return "(" + s.sp() + text + s.sp() + ")"
	}
	return text
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (s style) render(c *mcond) string {
	sp := s.sp
	not := ""
	if c.not {
		not = s.kw("NOT") + sp()
	}
	switch c.op {
	case "and", "or":
		parts := make([]string, len(c.kids))
		for i, k := range c.kids {
			parts[i] = s.render(k)
			if c.op == "and" && k.op == "or" {
				parts[i] = "(" + parts[i] + ")"
			}
		}
		return s.paren(strings.Join(parts, sp()+s.kw(strings.ToUpper(c.op))+sp()))
	case "not":
		return s.paren(s.kw("NOT") + sp() + "(" + s.render(c.kids[0]) + ")")
	case "cmp":
		return s.paren(c.prop + sp() + c.cmp + sp() + strconv.Itoa(c.n))
	case "eqs":
		return s.paren(c.prop + sp() + c.cmp + sp() + quote(c.s))
	case "eqn":
		return s.paren(c.prop + sp() + c.cmp + sp() + strconv.Itoa(c.n))
	case "isnull":
		return s.paren(c.prop + sp() + s.kw("IS") + sp() + not + s.kw("NULL"))
	case "between":
		return s.paren(fmt.Sprintf("%s%s%s%s%s%d%s%s%s%d", c.prop, sp(), not, s.kw("BETWEEN"), sp(), c.n, sp(), s.kw("AND"), sp(), c.m))
	case "contains":
		return s.paren(c.prop + sp() + not + s.kw("CONTAINS") + sp() + quote(c.s))
	}
	items := make([]string, len(c.list))
	for i, w := range c.list {
		items[i] = quote(w)
	}
	return s.paren(c.prop + sp() + not + s.kw("IN") + sp() + "(" + strings.Join(items, ","+sp()) + ")")
}

func TestModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := genCond(rt, 3)
		props := Map{}
		for _, name := range modelProps {
			if rapid.Bool().Draw(rt, "present") {
				props[name] = rapid.SampledFrom(modelValues).Draw(rt, "value")
			}
		}
		want := c.eval(props)
		for range 2 {
			text := style{rt}.render(c)
			e, err := Compile(text)
			if err != nil {
				rt.Fatalf("Compile(%q) = %v", text, err)
			}
			if e.String() != text {
				rt.Fatalf("String() = %q, want %q", e.String(), text)
			}
			if got := outcome(t, text, props); got != want {
				rt.Fatalf("%q on %v = %s, the model says %s", text, props, got, want)
			}
			if e.Matches(props) != (want == "TRUE") {
				rt.Fatalf("%q on %v: Matches disagrees with %s", text, props, want)
			}
		}
	})
}
