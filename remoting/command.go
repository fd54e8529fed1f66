package remoting

import (
	"fmt"
	"maps"
)

// SerializeType selects how a frame's header is encoded. It occupies the
// high byte of the frame's second word.
type SerializeType byte

// Header serialisations. Frozen: the values are on the wire.
const (
	// SerializeJSON is a JSON header, the only kind the Go client sends.
	SerializeJSON SerializeType = 0
	// SerializeRocketMQ is RocketMQ's compact binary header.
	SerializeRocketMQ SerializeType = 1
)

// String returns the name RocketMQ uses for the serialisation.
func (t SerializeType) String() string {
	switch t {
	case SerializeJSON:
		return "JSON"
	case SerializeRocketMQ:
		return "ROCKETMQ"
	default:
		return fmt.Sprintf("SerializeType(%d)", byte(t))
	}
}

// Flag bits of Command.Flag. Frozen.
const (
	// FlagResponse marks a response; requests leave it clear.
	FlagResponse int32 = 1 << 0
	// FlagOneway marks a request that must not be answered.
	FlagOneway int32 = 1 << 1
)

// ProtocolVersion is the version the Go client stamps on its requests
// (RocketMQ 4.x, MQVersion V4_9_x). Peers do not negotiate on it; it is
// informational.
const ProtocolVersion int16 = 317

// Command is one remoting request or response: the decoded header plus the
// body. A Command read from the wire owns its Body; nothing else aliases it.
type Command struct {
	Code          int16
	Language      string
	Version       int16
	Opaque        int32
	Flag          int32
	Remark        string
	ExtFields     map[string]string
	Body          []byte
	SerializeType SerializeType
}

// NewRequest returns a JSON-serialised request with the Go language tag and
// the protocol version. ext is used as is (not copied); a nil ext becomes an
// empty map so handlers may add fields. The opaque is assigned when the
// request is sent.
func NewRequest(code int16, ext map[string]string, body []byte) *Command {
	if ext == nil {
		ext = make(map[string]string)
	}
	return &Command{
		Code:      code,
		Language:  LanguageGo,
		Version:   ProtocolVersion,
		ExtFields: ext,
		Body:      body,
	}
}

// NewResponse returns a response to req: same opaque and serialisation,
// response bit set, an empty ExtFields ready to fill.
func NewResponse(req *Command, code int16, remark string) *Command {
	return &Command{
		Code:          code,
		Language:      LanguageGo,
		Version:       ProtocolVersion,
		Opaque:        req.Opaque,
		Flag:          FlagResponse,
		Remark:        remark,
		ExtFields:     make(map[string]string),
		SerializeType: req.SerializeType,
	}
}

// IsResponse reports whether the response bit is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the oneway bit is set. The Go client never sets
// it on its fire-and-forget requests, so a clear bit does not mean the peer
// waits for an answer.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// MarkResponse sets the response bit.
func (c *Command) MarkResponse() { c.Flag |= FlagResponse }

// MarkOneway sets the oneway bit.
func (c *Command) MarkOneway() { c.Flag |= FlagOneway }

// Clone returns a copy whose ExtFields map can be changed independently.
// The body is shared: bodies are treated as immutable once built.
func (c *Command) Clone() *Command {
	cp := *c
	if c.ExtFields != nil {
		cp.ExtFields = maps.Clone(c.ExtFields)
	}
	return &cp
}

// String summarises the command for logs without the body.
func (c *Command) String() string {
	name := CodeName(c.Code)
	kind := "request"
	if c.IsResponse() {
		name = ResponseCodeName(c.Code)
		kind = "response"
	}
	return fmt.Sprintf("%s code=%s(%d) opaque=%d flag=%d remark=%q ext=%v body=%dB",
		kind, name, c.Code, c.Opaque, c.Flag, c.Remark, c.ExtFields, len(c.Body))
}
