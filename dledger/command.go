package dledger

import (
	"fmt"

	"github.com/raftmq/raftmq/internal/wire"
)

// CommandType identifies a command in a raft entry. The values are frozen:
// they are on disk in every commitlog. dledger owns CmdPutMessages; every
// other value belongs to the node's StateMachine.
type CommandType uint8

// CmdPutMessages is the put entry: messages with their leader-assigned
// offsets. Frozen.
const CmdPutMessages CommandType = 1

// Frozen layout constants of the entry header (see doc.go).
const (
	// CommandVersion is the only entry version this binary writes and
	// reads. Version 1 (before the state machine was split out of this
	// package) is not read.
	CommandVersion = 2
	headerLen      = 4
	// putFixedLen is the fixed part of a put entry after the header.
	putFixedLen = 8 + 8 + 4 + 4 + 4
	// putMetaMin is the smallest per-message metadata record (the u32
	// count of side commands after the messages is not counted).
	putMetaMin = 2 + 4 + 8 + 8 + 4 + 8 + 8 + 2
	// sideMin is the smallest side command: type u8 + body length u32.
	sideMin = 1 + 4
)

// String names the type for logs.
func (t CommandType) String() string {
	if t == CmdPutMessages {
		return "PutMessages"
	}
	return fmt.Sprintf("CommandType(%d)", uint8(t))
}

// Command is a state change proposed through the group: a
// PutMessagesCommand, or a command of the node's StateMachine, which
// decodes what AppendBody wrote.
type Command interface {
	// Type returns the frozen command type.
	Type() CommandType
	// AppendBody appends the command's encoding (what follows the entry
	// header) to b.
	AppendBody(b []byte) ([]byte, error)
}

// Batchable is a Command whose concurrent proposals the leader merges into
// one entry (consumer offset commits): Merge(more) must apply exactly as
// the receiver followed by more, in order.
type Batchable interface {
	Command
	// Len is the command's item count; it counts against
	// Config.MaxBatchMessages and must be positive.
	Len() int
	// Merge returns one command of the same type doing what the receiver
	// and then each of more do.
	Merge(more []Command) Command
}

// Message is one message of a PutMessagesCommand as the proposer gives it.
// Record is the complete RocketMQ stored-message record; the leader writes
// the queue offset, commit offset and store timestamp into it in place, so
// the caller must not touch Record after Propose.
type Message struct {
	Topic    string
	QueueID  int32
	TagsCode int64
	// Keys are the index keys (already "topic#key" if the index wants that).
	Keys []string
	// StoreTimestamp, when 0, is set by the leader at coalescing time.
	StoreTimestamp int64
	Record         []byte
}

// PutMessagesCommand appends messages. Concurrent PutMessagesCommands are
// coalesced by the leader into one entry.
type PutMessagesCommand struct {
	Messages []Message
	// With are state-machine commands applied in the same entry, after the
	// messages, so a delivered delayed message and the scheduler progress
	// past it commit together (no duplicate or loss on failover). In a
	// coalesced entry they apply in proposal order.
	With []Command
	// Term, if not 0, pins the proposal to one leadership term: it is
	// refused with ErrStaleProposal (nothing appended) unless the leader
	// builds its entry in that term. A scheduler that loaded its progress
	// after a barrier in term T pins its deliveries to T, so a
	// lost-and-regained leadership can never commit them from stale
	// progress.
	Term uint64
	// EarlyAck lets the proposal be answered once its entry is durable on
	// a majority, before this node applied it (earlyack.go): its messages
	// become readable on this node a moment after the answer
	// (Result.Applied). For puts whose caller reads nothing back at once.
	EarlyAck bool
}

// Type implements Command.
func (*PutMessagesCommand) Type() CommandType { return CmdPutMessages }

// AppendBody is not used: put entries are built by the proposer from the
// assigned messages, never from the caller's command.
func (*PutMessagesCommand) AppendBody([]byte) ([]byte, error) {
	return nil, fmt.Errorf("%w: PutMessagesCommand is encoded by the proposer", ErrInvalidCommand)
}

// AppliedMessage is one message as stored in a put entry: what the caller
// gave plus the offsets the leader assigned.
type AppliedMessage struct {
	Topic          string
	QueueID        int32
	QueueOffset    int64
	CommitOffset   int64
	Size           int32
	TagsCode       int64
	StoreTimestamp int64
	Keys           []string
}

// rawCommand is a state-machine command as an entry carries it.
type rawCommand struct {
	typ  CommandType
	body []byte
}

// putEntry is a decoded put entry. Records and the side commands' bodies
// alias the entry data.
type putEntry struct {
	Term              uint64
	FirstCommitOffset int64
	Messages          []AppliedMessage
	With              []rawCommand
	Records           []byte
}

// encodeSide encodes a side command of a put: type, body length, body.
func encodeSide(c Command) ([]byte, error) {
	if c == nil || c.Type() == CmdPutMessages {
		return nil, fmt.Errorf("%w: a put's side command must be a state-machine command", ErrInvalidCommand)
	}
	b, err := c.AppendBody(make([]byte, sideMin, 64))
	if err != nil {
		return nil, err
	}
	b[0] = byte(c.Type())
	n := len(b) - sideMin
	b[1], b[2], b[3], b[4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return b, nil
}

// encodePut writes a put entry. records is the concatenation of the
// messages' records in order; with holds encodeSide outputs.
func encodePut(term uint64, msgs []AppliedMessage, with [][]byte, records [][]byte) ([]byte, error) {
	meta := wire.Encoder{Sentinel: ErrInvalidCommand}
	payload := 0
	for i := range msgs {
		m := &msgs[i]
		meta.Str(m.Topic)
		meta.I32(m.QueueID)
		meta.I64(m.QueueOffset)
		meta.I64(m.CommitOffset)
		meta.I32(m.Size)
		meta.I64(m.TagsCode)
		meta.I64(m.StoreTimestamp)
		meta.U16(uint16(len(m.Keys)))
		for _, k := range m.Keys {
			meta.Str(k)
		}
		payload += len(records[i])
	}
	meta.Count(len(with))
	for _, w := range with {
		meta.B = append(meta.B, w...)
	}
	if meta.Err != nil {
		return nil, meta.Err
	}
	var first int64
	if len(msgs) > 0 {
		first = msgs[0].CommitOffset
	}
	e := wire.Encoder{B: make([]byte, 0, headerLen+putFixedLen+len(meta.B)+payload), Sentinel: ErrInvalidCommand}
	e.U8(CommandVersion)
	e.U8(uint8(CmdPutMessages))
	e.U16(0)
	e.U64(term)
	e.I64(first)
	e.Count(len(msgs))
	e.Count(len(meta.B))
	e.Count(payload)
	e.B = append(e.B, meta.B...)
	for _, r := range records {
		e.B = append(e.B, r...)
	}
	return e.B, e.Err
}

// peekPut reads the fixed part of a put entry: what SpanFunc needs.
func peekPut(data []byte) (term uint64, first int64, msgStart, msgLen int, ok bool) {
	if len(data) < headerLen+putFixedLen || data[0] != CommandVersion || CommandType(data[1]) != CmdPutMessages {
		return 0, 0, 0, 0, false
	}
	d := wire.Decoder{B: data, Off: headerLen}
	term = d.U64()
	first = d.I64()
	d.U32()
	metaLen := int(d.U32())
	payload := int(d.U32())
	start := headerLen + putFixedLen + metaLen
	if metaLen < 0 || payload < 0 || start+payload != len(data) {
		return 0, 0, 0, 0, false
	}
	return term, first, start, payload, true
}

func decodePut(d *wire.Decoder) (*putEntry, error) {
	p := &putEntry{Term: d.U64(), FirstCommitOffset: d.I64()}
	n := d.Count(putMetaMin)
	metaLen := int(d.U32())
	payload := int(d.U32())
	metaStart := d.Off
	p.Messages = make([]AppliedMessage, n)
	sum := 0
	for i := range p.Messages {
		m := &p.Messages[i]
		m.Topic, m.QueueID, m.QueueOffset, m.CommitOffset = d.Str(), d.I32(), d.I64(), d.I64()
		m.Size, m.TagsCode, m.StoreTimestamp = d.I32(), d.I64(), d.I64()
		nk := int(d.U16())
		for j := 0; j < nk && d.Err == nil; j++ {
			m.Keys = append(m.Keys, d.Str())
		}
		sum += int(m.Size)
	}
	ns := d.Count(sideMin)
	for i := 0; i < ns && d.Err == nil; i++ {
		t := CommandType(d.U8())
		p.With = append(p.With, rawCommand{typ: t, body: d.Bytes(int(d.U32()))})
		if t == CmdPutMessages && d.Err == nil {
			return nil, fmt.Errorf("%w: a put inside a put", ErrInvalidCommand)
		}
	}
	if d.Err == nil && d.Off-metaStart != metaLen {
		return nil, fmt.Errorf("%w: put metadata is %d bytes, header says %d", ErrInvalidCommand, d.Off-metaStart, metaLen)
	}
	if d.Err == nil && sum != payload {
		return nil, fmt.Errorf("%w: message sizes sum to %d, payload is %d", ErrInvalidCommand, sum, payload)
	}
	p.Records = d.Bytes(payload)
	return p, d.End()
}

// encodeCommand writes a state-machine command entry.
func encodeCommand(c Command) ([]byte, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil command", ErrInvalidCommand)
	}
	t := c.Type()
	if t == CmdPutMessages {
		return nil, fmt.Errorf("%w: put entries are built by the proposer", ErrInvalidCommand)
	}
	return c.AppendBody([]byte{CommandVersion, byte(t), 0, 0})
}

// decodeEntry decodes any command entry: a *putEntry or a rawCommand for
// the state machine.
func decodeEntry(data []byte) (any, error) {
	d := &wire.Decoder{B: data, Sentinel: ErrInvalidCommand}
	ver, typ := d.U8(), CommandType(d.U8())
	d.U16()
	if d.Err != nil {
		return nil, d.Err
	}
	if ver != CommandVersion {
		return nil, fmt.Errorf("%w: entry format version %d (this binary reads %d; a data directory of a raftmq before the state-machine split must be removed)",
			ErrUnknownCommand, ver, CommandVersion)
	}
	if typ == CmdPutMessages {
		return decodePut(d)
	}
	return rawCommand{typ: typ, body: data[headerLen:]}, nil
}
