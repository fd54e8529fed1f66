package protocol

import "strconv"

// Header reads the fields of a request header (extFields) and keeps the
// first problem, so a handler reads every field it needs and checks Err
// once. Required fields that are missing or empty, and numbers that do
// not parse, are problems; optional fields default.
type Header struct {
	ext map[string]string
	// alias maps a field's name to the short key a V2 header uses for it
	// (SEND_MESSAGE_V2); the short key is tried first.
	alias map[string]string
	err   error
}

// ReadHeader starts reading ext.
func ReadHeader(ext map[string]string) *Header { return &Header{ext: ext} }

// HeaderError is a missing or malformed header field, worded as RocketMQ's
// RemotingCommand.decodeCommandCustomHeader.
type HeaderError struct {
	Key   string
	Value string // "" when the field is missing
}

// Error implements error.
func (e *HeaderError) Error() string {
	if e.Value == "" {
		return "the custom field <" + e.Key + "> is null"
	}
	return "the custom field <" + e.Key + "> has an invalid value " + strconv.Quote(e.Value)
}

// Err returns the first problem found, nil if none.
func (h *Header) Err() error { return h.err }

func (h *Header) fail(key, value string) {
	if h.err == nil {
		h.err = &HeaderError{Key: key, Value: value}
	}
}

// lookup returns key's value, trying its V2 alias first.
func (h *Header) lookup(key string) (string, bool) {
	if short, ok := h.alias[key]; ok {
		if v, ok := h.ext[short]; ok {
			return v, true
		}
	}
	v, ok := h.ext[key]
	return v, ok
}

// Has reports whether the header carries key (or its alias) at all.
func (h *Header) Has(key string) bool {
	_, ok := h.lookup(key)
	return ok
}

// Str reads a required string field.
func (h *Header) Str(key string) string {
	v, _ := h.lookup(key)
	if v == "" {
		h.fail(key, "")
	}
	return v
}

// OptStr reads an optional string field ("" when missing).
func (h *Header) OptStr(key string) string {
	v, _ := h.lookup(key)
	return v
}

func (h *Header) number(key string, bits int, required bool, def int64) int64 {
	v, _ := h.lookup(key)
	if v == "" {
		if required {
			h.fail(key, "")
		}
		return def
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		h.fail(key, v)
		return def
	}
	return n
}

// Int32 reads a required 32-bit number.
func (h *Header) Int32(key string) int32 { return int32(h.number(key, 32, true, 0)) }

// OptInt32 reads an optional 32-bit number, def when missing or empty.
func (h *Header) OptInt32(key string, def int32) int32 {
	return int32(h.number(key, 32, false, int64(def)))
}

// Int64 reads a required 64-bit number.
func (h *Header) Int64(key string) int64 { return h.number(key, 64, true, 0) }

// OptInt64 reads an optional 64-bit number, def when missing or empty.
func (h *Header) OptInt64(key string, def int64) int64 { return h.number(key, 64, false, def) }

// OptBool reads an optional boolean ("true"/"false", as Java's
// Boolean.parseBoolean writes them), def when missing or empty.
func (h *Header) OptBool(key string, def bool) bool {
	v, _ := h.lookup(key)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		h.fail(key, v)
		return def
	}
	return b
}

// itoa and ltoa format header numbers.
func itoa(v int32) string { return strconv.FormatInt(int64(v), 10) }
func ltoa(v int64) string { return strconv.FormatInt(v, 10) }
