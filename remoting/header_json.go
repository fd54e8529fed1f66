package remoting

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// appendJSONHeader writes the header exactly as encoding/json marshals the
// Go client's RemotingCommand struct: fields in declaration order, map keys
// sorted, HTML-safe escaping. Byte-identical output lets tests compare our
// frames with captured ones. A nil ExtFields is written as {} rather than
// null: every known peer accepts an object, not every one accepts null.
func appendJSONHeader(dst []byte, c *Command) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"language":`...)
	dst = appendJSONString(dst, c.Language)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	dst = append(dst, `,"remark":`...)
	dst = appendJSONString(dst, c.Remark)
	dst = append(dst, `,"extFields":{`...)
	var stack [32]string
	keys := stack[:0]
	for k := range c.ExtFields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendJSONString(dst, c.ExtFields[k])
	}
	return append(dst, "}}"...)
}

const hexDigits = "0123456789abcdef"

// jsonSafe reports whether an ASCII byte can be copied verbatim; the rest
// are escaped as encoding/json does with HTML escaping on.
func jsonSafe(b byte) bool {
	return b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
}

func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if jsonSafe(b) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = appendJSONEscape(dst, b)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 break JavaScript parsers; encoding/json escapes them.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendJSONEscape(dst []byte, b byte) []byte {
	switch b {
	case '"', '\\':
		return append(dst, '\\', b)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	default:
		return append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
	}
}

// jsonHeader is the shape decoded from peers. Unknown fields (Java adds
// serializeTypeCurrentRPC) are ignored.
type jsonHeader struct {
	Code      int16             `json:"code"`
	Language  string            `json:"language"`
	Version   int16             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
}

// liberalJSONHeader is the fallback when extFields holds non-string values.
type liberalJSONHeader struct {
	jsonHeader
	ExtFields map[string]json.RawMessage `json:"extFields"`
}

// decodeJSONHeader tries the reflection-free parser first, then
// encoding/json with strictly typed fields, then accepts numbers and
// booleans in extFields (as their JSON text): we only ever write strings,
// but a peer's serializer may not.
func decodeJSONHeader(data []byte) (*Command, error) {
	if c, ok := decodeJSONHeaderFast(data); ok {
		return c, nil
	}
	return decodeJSONHeaderSlow(data)
}

// decodeJSONHeaderSlow is the encoding/json path, the reference for the
// fast one.
func decodeJSONHeaderSlow(data []byte) (*Command, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: JSON header is not an object", ErrBadHeader)
	}
	var h jsonHeader
	if err := json.Unmarshal(data, &h); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return nil, fmt.Errorf("%w: %w", ErrBadHeader, err)
		}
		if h, err = decodeLiberalJSONHeader(data); err != nil {
			return nil, err
		}
	}
	if h.ExtFields == nil {
		h.ExtFields = make(map[string]string)
	}
	return &Command{
		Code:          h.Code,
		Language:      h.Language,
		Version:       h.Version,
		Opaque:        h.Opaque,
		Flag:          h.Flag,
		Remark:        h.Remark,
		ExtFields:     h.ExtFields,
		SerializeType: SerializeJSON,
	}, nil
}

func decodeLiberalJSONHeader(data []byte) (jsonHeader, error) {
	var lh liberalJSONHeader
	if err := json.Unmarshal(data, &lh); err != nil {
		return jsonHeader{}, fmt.Errorf("%w: %w", ErrBadHeader, err)
	}
	h := lh.jsonHeader
	h.ExtFields = make(map[string]string, len(lh.ExtFields))
	for k, raw := range lh.ExtFields {
		v, err := extValueText(raw)
		if err != nil {
			return jsonHeader{}, fmt.Errorf("%w: extFields[%q]: %w", ErrBadHeader, k, err)
		}
		h.ExtFields[k] = v
	}
	return h, nil
}

// extValueText turns one JSON value into the string a Java peer would have
// meant. Objects and arrays have no such string and are refused.
func extValueText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case 'n':
		return "", nil
	case '{', '[':
		return "", fmt.Errorf("value of kind %c is not a string", raw[0])
	default: // number, true, false: already valid JSON text
		return string(raw), nil
	}
}
