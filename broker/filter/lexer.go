package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a token of RocketMQ's SelectorParser.jj.
type tokKind uint8

const (
	tEOF tokKind = iota
	tID
	tInt    // DECIMAL_LITERAL: 0, or [1-9][0-9]* with an optional l/L
	tFloat  // FLOATING_POINT_LITERAL
	tString // STRING_LITERAL, '' inside stands for one quote
	tNot
	tAnd
	tOr
	tBetween
	tIn
	tTrue
	tFalse
	tNull
	tIs
	tContains
	tStartsWith
	tEndsWith
	tEq     // =
	tNe     // <>
	tGt     // >
	tGe     // >=
	tLt     // <
	tLe     // <=
	tLParen // (
	tRParen // )
	tComma  // ,
	tPlus   // +
	tMinus  // -
)

// keywords are reserved and matched without regard to case; a longer
// word (NOTE, INDEX) is an identifier.
var keywords = [...]struct {
	word string
	kind tokKind
}{
	{"NOT", tNot}, {"AND", tAnd}, {"OR", tOr}, {"BETWEEN", tBetween},
	{"IN", tIn}, {"TRUE", tTrue}, {"FALSE", tFalse}, {"NULL", tNull},
	{"IS", tIs}, {"CONTAINS", tContains}, {"STARTSWITH", tStartsWith},
	{"ENDSWITH", tEndsWith},
}

// token is one lexeme; text is a slice of the source, quotes included for
// a string literal.
type token struct {
	kind tokKind
	pos  int // byte offset of the first byte
	text string
}

// describe names a token for an error message.
func (t token) describe() string {
	if t.kind == tEOF {
		return "end of expression"
	}
	if len(t.text) > 40 {
		return fmt.Sprintf("%q...", t.text[:40])
	}
	return fmt.Sprintf("%q", t.text)
}

// lexer splits a selector into tokens on demand, following the token
// definitions of SelectorParser.jj: the longest match wins and a keyword
// beats an identifier of the same length.
type lexer struct {
	src string
	pos int
}

// next returns the next token, or fails with a *SyntaxError (as a panic
// recovered by parse) on input no token matches.
func (l *lexer) next() token {
	l.skip()
	start := l.pos
	if start >= len(l.src) {
		return token{kind: tEOF, pos: start}
	}
	c := l.src[start]
	switch {
	case isIDStart(c):
		return l.ident()
	case isDigit(c), c == '.' && start+1 < len(l.src) && isDigit(l.src[start+1]):
		return l.number()
	case c == '\'':
		return l.str()
	}
	return l.punct()
}

// skip passes white space and comments. A "--" comment needs a line end
// to be one (the grammar's LINE_COMMENT ends with a newline); without it
// the dashes are minus signs.
func (l *lexer) skip() {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.pos++
		case strings.HasPrefix(l.src[l.pos:], "--"):
			nl := strings.IndexAny(l.src[l.pos:], "\r\n")
			if nl < 0 {
				return
			}
			l.pos += nl + 1
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				failf(l.pos, "unterminated /* comment")
			}
			l.pos += 2 + end + 2
		default:
			return
		}
	}
}

func isIDStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isIDPart(c byte) bool { return isIDStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (l *lexer) ident() token {
	start := l.pos
	for l.pos < len(l.src) && isIDPart(l.src[l.pos]) {
		l.pos++
	}
	text := l.src[start:l.pos]
	for _, kw := range keywords {
		if strings.EqualFold(text, kw.word) {
			return token{kind: kw.kind, pos: start, text: text}
		}
	}
	return token{kind: tID, pos: start, text: text}
}

// number scans a DECIMAL_LITERAL or a FLOATING_POINT_LITERAL. A decimal
// literal with a leading zero is just "0" (the grammar has no octal), so
// "007" is three tokens and a parse error, as in RocketMQ.
func (l *lexer) number() token {
	start := l.pos
	i := l.digits(start)
	if i < len(l.src) && l.src[i] == '.' {
		l.pos = l.exponent(l.digits(i + 1))
		return token{kind: tFloat, pos: start, text: l.src[start:l.pos]}
	}
	if e := l.exponent(i); e > i {
		l.pos = e
		return token{kind: tFloat, pos: start, text: l.src[start:l.pos]}
	}
	if l.src[start] == '0' {
		l.pos = start + 1
	} else {
		l.pos = i
		if l.pos < len(l.src) && (l.src[l.pos] == 'l' || l.src[l.pos] == 'L') {
			l.pos++
		}
	}
	return token{kind: tInt, pos: start, text: l.src[start:l.pos]}
}

// digits returns the end of the run of ASCII digits starting at i.
func (l *lexer) digits(i int) int {
	for i < len(l.src) && isDigit(l.src[i]) {
		i++
	}
	return i
}

// exponent returns the end of an exponent (E, optional sign, digits)
// starting at i, or i if there is none.
func (l *lexer) exponent(i int) int {
	if i >= len(l.src) || (l.src[i] != 'e' && l.src[i] != 'E') {
		return i
	}
	j := i + 1
	if j < len(l.src) && (l.src[j] == '+' || l.src[j] == '-') {
		j++
	}
	if e := l.digits(j); e > j {
		return e
	}
	return i
}

// str scans a quoted string literal; inside it anything but a lone quote
// is literal text, NUL bytes and line ends included.
func (l *lexer) str() token {
	start := l.pos
	i := start + 1
	for {
		q := strings.IndexByte(l.src[i:], '\'')
		if q < 0 {
			failf(start, "unterminated string literal")
		}
		i += q + 1
		if i < len(l.src) && l.src[i] == '\'' {
			i++
			continue
		}
		l.pos = i
		return token{kind: tString, pos: start, text: l.src[start:i]}
	}
}

// unquote decodes a string literal's text.
func unquote(text string) string {
	return strings.ReplaceAll(text[1:len(text)-1], "''", "'")
}

var puncts = [...]struct {
	text string
	kind tokKind
}{
	// two-byte operators first: longest match
	{"<>", tNe}, {"<=", tLe}, {">=", tGe},
	{"=", tEq}, {"<", tLt}, {">", tGt}, {"(", tLParen}, {")", tRParen},
	{",", tComma}, {"+", tPlus}, {"-", tMinus},
}

func (l *lexer) punct() token {
	rest := l.src[l.pos:]
	for _, p := range puncts {
		if strings.HasPrefix(rest, p.text) {
			t := token{kind: p.kind, pos: l.pos, text: p.text}
			l.pos += len(p.text)
			return t
		}
	}
	failf(l.pos, "unexpected character %q", firstRune(rest))
	panic("unreachable")
}

// firstRune returns the character at the start of s, or its first byte if
// that is not valid UTF-8.
func firstRune(s string) string {
	_, size := utf8.DecodeRuneInString(s)
	return s[:size]
}
