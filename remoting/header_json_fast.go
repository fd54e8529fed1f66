package remoting

import (
	"strings"
	"unicode/utf8"
)

// decodeJSONHeaderFast parses the headers real peers send — a flat object
// of the known fields, integers, strings and an object of string ext values
// — without reflection. Anything else (null, floats, surrogate escapes,
// unknown keys with non-string values, invalid UTF-8, malformed JSON)
// returns ok == false, and decodeJSONHeader falls back to encoding/json,
// which decides. On inputs it accepts, the result equals encoding/json's;
// FuzzDecodeJSONHeader checks that.
func decodeJSONHeaderFast(data []byte) (*Command, bool) {
	s := jsonScanner{b: data}
	if !s.consume('{') {
		return nil, false
	}
	c := &Command{SerializeType: SerializeJSON}
	if !s.consume('}') {
		for {
			if !s.field(c) {
				return nil, false
			}
			if s.consume(',') {
				continue
			}
			if s.consume('}') {
				break
			}
			return nil, false
		}
	}
	s.skipSpace()
	if s.i != len(data) {
		return nil, false
	}
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string)
	}
	return c, true
}

type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScanner) consume(ch byte) bool {
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == ch {
		s.i++
		return true
	}
	return false
}

// field parses one "key": value pair into c.
func (s *jsonScanner) field(c *Command) bool {
	key, ok := s.str()
	if !ok || !s.consume(':') {
		return false
	}
	var n int64
	switch key {
	case "code":
		n, ok = s.int(16)
		c.Code = int16(n)
	case "version":
		n, ok = s.int(16)
		c.Version = int16(n)
	case "opaque":
		n, ok = s.int(32)
		c.Opaque = int32(n)
	case "flag":
		n, ok = s.int(32)
		c.Flag = int32(n)
	case "language":
		c.Language, ok = s.str()
	case "remark":
		c.Remark, ok = s.str()
	case "extFields":
		ok = s.ext(c)
	default:
		// encoding/json matches field names case-insensitively (with
		// Unicode folding), so a near-miss key is its call, not ours.
		if !isASCII(key) || isHeaderFieldFold(key) {
			return false
		}
		_, ok = s.str()
	}
	return ok
}

var headerFieldNames = [...]string{"code", "language", "version", "opaque", "flag", "remark", "extFields"}

func isHeaderFieldFold(key string) bool {
	for _, name := range headerFieldNames {
		if strings.EqualFold(key, name) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// ext parses the extFields object, adding to an existing map as
// encoding/json does when the key repeats.
func (s *jsonScanner) ext(c *Command) bool {
	if !s.consume('{') {
		return false
	}
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 16)
	}
	if s.consume('}') {
		return true
	}
	for {
		k, ok := s.str()
		if !ok || !s.consume(':') {
			return false
		}
		v, ok := s.str()
		if !ok {
			return false
		}
		c.ExtFields[k] = v
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}

// int parses a JSON integer (no fraction or exponent) that fits in bits.
func (s *jsonScanner) int(bits uint) (int64, bool) {
	s.skipSpace()
	b, i := s.b, s.i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var v int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if i-start >= 11 {
			return 0, false
		}
		v = v*10 + int64(b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || (digits > 1 && b[start] == '0') {
		return 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, false
	}
	if neg {
		v = -v
	}
	limit := int64(1) << (bits - 1)
	if v < -limit || v >= limit {
		return 0, false
	}
	s.i = i
	return v, true
}

// str parses a JSON string. Escapes other than \uD800-\uDFFF are decoded;
// raw control characters and invalid UTF-8 are refused.
func (s *jsonScanner) str() (string, bool) {
	s.skipSpace()
	b := s.b
	if s.i >= len(b) || b[s.i] != '"' {
		return "", false
	}
	start := s.i + 1
	ascii := true
	for i := start; i < len(b); i++ {
		switch ch := b[i]; {
		case ch == '"':
			if !ascii && !utf8.Valid(b[start:i]) {
				return "", false
			}
			s.i = i + 1
			return string(b[start:i]), true
		case ch == '\\':
			return s.strEscaped(start, i)
		case ch < 0x20:
			return "", false
		case ch >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

func (s *jsonScanner) strEscaped(start, i int) (string, bool) {
	b := s.b
	out := make([]byte, 0, i-start+16)
	out = append(out, b[start:i]...)
	for i < len(b) {
		ch := b[i]
		switch {
		case ch == '"':
			if !utf8.Valid(out) {
				return "", false
			}
			s.i = i + 1
			return string(out), true
		case ch < 0x20:
			return "", false
		case ch != '\\':
			out = append(out, ch)
			i++
			continue
		}
		if i+1 >= len(b) {
			return "", false
		}
		var ok bool
		out, i, ok = appendUnescaped(out, b, i+1)
		if !ok {
			return "", false
		}
	}
	return "", false
}

// appendUnescaped decodes the escape whose letter is at b[i] and returns
// the index after it.
func appendUnescaped(out, b []byte, i int) ([]byte, int, bool) {
	switch b[i] {
	case '"', '\\', '/':
		return append(out, b[i]), i + 1, true
	case 'b':
		return append(out, '\b'), i + 1, true
	case 'f':
		return append(out, '\f'), i + 1, true
	case 'n':
		return append(out, '\n'), i + 1, true
	case 'r':
		return append(out, '\r'), i + 1, true
	case 't':
		return append(out, '\t'), i + 1, true
	case 'u':
		if i+5 > len(b) {
			return out, i, false
		}
		var r rune
		for _, h := range b[i+1 : i+5] {
			switch {
			case h >= '0' && h <= '9':
				r = r<<4 | rune(h-'0')
			case h >= 'a' && h <= 'f':
				r = r<<4 | rune(h-'a'+10)
			case h >= 'A' && h <= 'F':
				r = r<<4 | rune(h-'A'+10)
			default:
				return out, i, false
			}
		}
		if r >= 0xD800 && r <= 0xDFFF {
			return out, i, false // surrogates: leave pairing rules to encoding/json
		}
		return utf8.AppendRune(out, r), i + 5, true
	default:
		return out, i, false
	}
}
