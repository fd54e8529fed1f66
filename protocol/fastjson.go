package protocol

// RocketMQ's Java side serialises maps keyed by MessageQueue with
// fastjson, which writes the key object itself as the member name:
// {"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:5}}. That is
// not JSON, but the Java admin tools and the official Go client parse
// exactly that, so the admin bodies that carry such maps are written and
// read here rather than with encoding/json alone.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// MQMap is a map keyed by message queue. MarshalFastJSON writes it the
// fastjson way; encoding/json writes it as gson does ([[queue,value],…]),
// which is valid JSON. Its UnmarshalJSON reads either (fastjson bodies go
// through UnmarshalFastJSON first).
type MQMap[V any] map[MessageQueue]V

// MarshalJSON writes the map as gson's [[queue,value],…], sorted by queue.
func (m MQMap[V]) MarshalJSON() ([]byte, error) {
	pairs := make([][2]any, 0, len(m))
	for _, q := range SortedQueues(m) {
		pairs = append(pairs, [2]any{q, m[q]})
	}
	return json.Marshal(pairs)
}

// UnmarshalJSON reads gson's array of pairs or an object whose member
// names are queue objects written as JSON strings (UnmarshalFastJSON
// rewrites fastjson's bare key objects that way).
func (m *MQMap[V]) UnmarshalJSON(data []byte) error {
	out := MQMap[V]{}
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
	case len(data) > 0 && data[0] == '[':
		var pairs []json.RawMessage
		if err := json.Unmarshal(data, &pairs); err != nil {
			return err
		}
		for _, p := range pairs {
			var kv []json.RawMessage
			if err := json.Unmarshal(p, &kv); err != nil || len(kv) != 2 {
				return fmt.Errorf("protocol: queue map entry %s is not [queue,value]", p)
			}
			if err := out.put(kv[0], kv[1]); err != nil {
				return err
			}
		}
	default:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return err
		}
		for k, v := range obj {
			if err := out.put([]byte(k), v); err != nil {
				return err
			}
		}
	}
	*m = out
	return nil
}

func (m MQMap[V]) put(key, value []byte) error {
	var q MessageQueue
	if err := json.Unmarshal(key, &q); err != nil {
		return fmt.Errorf("protocol: queue map key %s is not a MessageQueue: %w", key, err)
	}
	var v V
	if err := json.Unmarshal(value, &v); err != nil {
		return fmt.Errorf("protocol: queue map value of %s: %w", key, err)
	}
	m[q] = v
	return nil
}

// SortedQueues returns m's queues by topic, broker name and queue id.
func SortedQueues[V any](m map[MessageQueue]V) []MessageQueue {
	qs := make([]MessageQueue, 0, len(m))
	for q := range m {
		qs = append(qs, q)
	}
	slices.SortFunc(qs, CompareQueues)
	return qs
}

// CompareQueues orders queues by topic, broker name, then queue id.
func CompareQueues(a, b MessageQueue) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := strings.Compare(a.BrokerName, b.BrokerName); c != 0 {
		return c
	}
	return int(a.QueueID) - int(b.QueueID)
}

// MarshalFastJSON encodes v as encoding/json would, except that maps with
// struct keys (MQMap) are written with the key objects as member names,
// as fastjson does.
func MarshalFastJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeFast(&buf, reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

func writeFast(buf *bytes.Buffer, v reflect.Value) error {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		v = v.Elem()
	}
	switch {
	case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.Struct:
		return writeStructKeyed(buf, v)
	case v.Type().Implements(jsonMarshaler):
		return writePlain(buf, v)
	case v.Kind() == reflect.Struct:
		return writeStruct(buf, v)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8, v.Kind() == reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeFast(buf, v.Index(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case v.Kind() == reflect.Map:
		return writeMap(buf, v)
	}
	return writePlain(buf, v)
}

func writePlain(buf *bytes.Buffer, v reflect.Value) error {
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

// writeStructKeyed writes a struct-keyed map, keys in their encoded
// order so the output is deterministic.
func writeStructKeyed(buf *bytes.Buffer, v reflect.Value) error {
	type member struct{ key, value []byte }
	members := make([]member, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		var k, val bytes.Buffer
		if err := writeFast(&k, it.Key()); err != nil {
			return err
		}
		if err := writeFast(&val, it.Value()); err != nil {
			return err
		}
		members = append(members, member{k.Bytes(), val.Bytes()})
	}
	slices.SortFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	buf.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(m.key)
		buf.WriteByte(':')
		buf.Write(m.value)
	}
	buf.WriteByte('}')
	return nil
}

// writeMap writes a map with string or integer keys (encoding/json's
// key rules) whose values may hold struct-keyed maps.
func writeMap(buf *bytes.Buffer, v reflect.Value) error {
	type member struct {
		key   string
		value reflect.Value
	}
	members := make([]member, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		members = append(members, member{fmt.Sprint(it.Key().Interface()), it.Value()})
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	buf.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		buf.Write(k)
		buf.WriteByte(':')
		if err := writeFast(buf, m.value); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

func writeStruct(buf *bytes.Buffer, v reflect.Value) error {
	t := v.Type()
	buf.WriteByte('{')
	n := 0
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fv := v.Field(i)
		if strings.Contains(opts, "omitempty") && fv.IsZero() {
			continue
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(name)
		buf.Write(k)
		buf.WriteByte(':')
		if err := writeFast(buf, fv); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// UnmarshalFastJSON decodes a fastjson body into v: member names that are
// objects (fastjson's MessageQueue keys) are read as JSON strings holding
// the object, which MQMap decodes. Valid JSON passes through unchanged.
func UnmarshalFastJSON(data []byte, v any) error {
	fixed, err := quoteObjectKeys(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(fixed, v)
}

// quoteObjectKeys rewrites every object member name that is itself an
// object into a JSON string of that object.
func quoteObjectKeys(data []byte) ([]byte, error) {
	out := make([]byte, 0, len(data)+64)
	var stack []byte // '{' or '['
	expectKey := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case '"':
			end, err := stringEnd(data, i)
			if err != nil {
				return nil, err
			}
			out = append(out, data[i:end]...)
			i = end - 1
			continue
		case '{':
			if expectKey {
				end, err := valueEnd(data, i)
				if err != nil {
					return nil, err
				}
				k, _ := json.Marshal(string(data[i:end]))
				out = append(out, k...)
				i = end - 1
				expectKey = false
				continue
			}
			stack = append(stack, '{')
			expectKey = true
		case '[':
			stack = append(stack, '[')
			expectKey = false
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
		case ':':
			expectKey = false
		}
		out = append(out, c)
	}
	return out, nil
}

// stringEnd returns the index just past the JSON string starting at i.
func stringEnd(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("protocol: unterminated string at byte %d", i)
}

// valueEnd returns the index just past the object starting at i.
func valueEnd(data []byte, i int) (int, error) {
	depth := 0
	for j := i; j < len(data); j++ {
		switch data[j] {
		case '"':
			end, err := stringEnd(data, j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("protocol: unterminated object at byte %d", i)
}
