package dledger

import (
	"fmt"
)

// CommandType identifies a command in a raft entry. The values are frozen:
// they are on disk in every commitlog.
type CommandType uint8

// Command types. Frozen; never renumber, only append.
const (
	CmdPutMessages             CommandType = 1
	CmdCommitOffsets           CommandType = 2
	CmdPutTopic                CommandType = 3
	CmdDeleteTopic             CommandType = 4
	CmdPutSubscriptionGroup    CommandType = 5
	CmdDeleteSubscriptionGroup CommandType = 6
	CmdDelayProgress           CommandType = 7
	CmdResetOffsets            CommandType = 8
	// CmdTransactionState is reserved for half/op message state; entries of
	// this type are rejected by encoder and decoder until it is specified.
	CmdTransactionState CommandType = 9
)

// Frozen layout constants of the entry header (see doc.go).
const (
	// CommandVersion is the only version this binary writes and reads.
	CommandVersion = 1
	headerLen      = 4
	// putFixedLen is the fixed part of a put entry after the header.
	putFixedLen = 8 + 8 + 4 + 4 + 4
	// putMetaMin is the smallest per-message metadata record (the u32
	// delay-progress count after the messages is not counted).
	putMetaMin = 2 + 4 + 8 + 8 + 4 + 8 + 8 + 2
)

// String names the type for logs.
func (t CommandType) String() string {
	names := map[CommandType]string{
		CmdPutMessages: "PutMessages", CmdCommitOffsets: "CommitOffsets",
		CmdPutTopic: "PutTopic", CmdDeleteTopic: "DeleteTopic",
		CmdPutSubscriptionGroup: "PutSubscriptionGroup", CmdDeleteSubscriptionGroup: "DeleteSubscriptionGroup",
		CmdDelayProgress: "DelayProgress", CmdResetOffsets: "ResetOffsets",
		CmdTransactionState: "TransactionState",
	}
	if s, ok := names[t]; ok {
		return s
	}
	return fmt.Sprintf("CommandType(%d)", uint8(t))
}

// Command is a state change proposed through the group. The concrete
// types are the exported *...Command structs of this package.
type Command interface {
	// Type returns the frozen command type.
	Type() CommandType
	encodeBody(e *encoder)
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
	// DelayProgress, if set, advances delay-queue progress in the same
	// entry as the messages, so a delivered delayed message and the
	// progress past it commit together (no duplicate or loss on failover).
	// Within a coalesced entry, later proposals win for the same queue.
	DelayProgress []DelayProgress
	// Term, if not 0, pins the proposal to one leadership term: it is
	// refused with ErrStaleProposal (nothing appended) unless the leader
	// builds its entry in that term. A delay scheduler that loaded its
	// progress after a barrier in term T pins its deliveries to T, so a
	// lost-and-regained leadership can never commit them from stale
	// progress.
	Term uint64
}

// Type implements Command.
func (*PutMessagesCommand) Type() CommandType { return CmdPutMessages }

// encodeBody is unused: put entries are built by encodePut from assigned
// messages, never from the caller's command.
func (*PutMessagesCommand) encodeBody(e *encoder) {
	e.err = fmt.Errorf("%w: PutMessagesCommand is encoded by the proposer", ErrInvalidCommand)
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

// putEntry is a decoded put entry. Records aliases the entry data.
type putEntry struct {
	Term              uint64
	FirstCommitOffset int64
	Messages          []AppliedMessage
	Delay             []DelayProgress
	Records           []byte
}

// encodePut writes a put entry. records is the concatenation of the
// messages' records in order.
func encodePut(term uint64, msgs []AppliedMessage, delay []DelayProgress, records [][]byte) ([]byte, error) {
	var meta encoder
	payload := 0
	for i := range msgs {
		m := &msgs[i]
		meta.str(m.Topic)
		meta.i32(m.QueueID)
		meta.i64(m.QueueOffset)
		meta.i64(m.CommitOffset)
		meta.i32(m.Size)
		meta.i64(m.TagsCode)
		meta.i64(m.StoreTimestamp)
		meta.u16(uint16(len(m.Keys)))
		for _, k := range m.Keys {
			meta.str(k)
		}
		payload += len(records[i])
	}
	meta.count(len(delay))
	for _, d := range delay {
		meta.i32(d.QueueID)
		meta.i64(d.Offset)
	}
	if meta.err != nil {
		return nil, meta.err
	}
	var first int64
	if len(msgs) > 0 {
		first = msgs[0].CommitOffset
	}
	e := encoder{b: make([]byte, 0, headerLen+putFixedLen+len(meta.b)+payload)}
	e.u8(CommandVersion)
	e.u8(uint8(CmdPutMessages))
	e.u16(0)
	e.u64(term)
	e.i64(first)
	e.count(len(msgs))
	e.count(len(meta.b))
	e.count(payload)
	e.b = append(e.b, meta.b...)
	for _, r := range records {
		e.b = append(e.b, r...)
	}
	return e.b, e.err
}

// peekPut reads the fixed part of a put entry: what SpanFunc needs.
func peekPut(data []byte) (term uint64, first int64, msgStart, msgLen int, ok bool) {
	if len(data) < headerLen+putFixedLen || data[0] != CommandVersion || CommandType(data[1]) != CmdPutMessages {
		return 0, 0, 0, 0, false
	}
	d := decoder{b: data, off: headerLen}
	term = d.u64()
	first = d.i64()
	d.u32()
	metaLen := int(d.u32())
	payload := int(d.u32())
	start := headerLen + putFixedLen + metaLen
	if metaLen < 0 || payload < 0 || start+payload != len(data) {
		return 0, 0, 0, 0, false
	}
	return term, first, start, payload, true
}

func decodePut(d *decoder) (*putEntry, error) {
	p := &putEntry{Term: d.u64(), FirstCommitOffset: d.i64()}
	n := d.count(putMetaMin)
	metaLen := int(d.u32())
	payload := int(d.u32())
	metaStart := d.off
	p.Messages = make([]AppliedMessage, n)
	sum := 0
	for i := range p.Messages {
		m := &p.Messages[i]
		m.Topic, m.QueueID, m.QueueOffset, m.CommitOffset = d.str(), d.i32(), d.i64(), d.i64()
		m.Size, m.TagsCode, m.StoreTimestamp = d.i32(), d.i64(), d.i64()
		nk := int(d.u16())
		for j := 0; j < nk && d.err == nil; j++ {
			m.Keys = append(m.Keys, d.str())
		}
		sum += int(m.Size)
	}
	nd := d.count(12)
	for i := 0; i < nd && d.err == nil; i++ {
		p.Delay = append(p.Delay, DelayProgress{d.i32(), d.i64()})
	}
	if d.err == nil && d.off-metaStart != metaLen {
		return nil, fmt.Errorf("%w: put metadata is %d bytes, header says %d", ErrInvalidCommand, d.off-metaStart, metaLen)
	}
	if d.err == nil && sum != payload {
		return nil, fmt.Errorf("%w: message sizes sum to %d, payload is %d", ErrInvalidCommand, sum, payload)
	}
	p.Records = d.bytes(payload)
	return p, d.end()
}

// encodeCommand writes a non-put command entry.
func encodeCommand(c Command) ([]byte, error) {
	t := c.Type()
	if t == CmdPutMessages {
		return nil, fmt.Errorf("%w: put entries are built by the proposer", ErrInvalidCommand)
	}
	if t == CmdTransactionState {
		return nil, ErrReserved
	}
	e := encoder{b: make([]byte, 0, 64)}
	e.u8(CommandVersion)
	e.u8(uint8(t))
	e.u16(0)
	c.encodeBody(&e)
	return e.b, e.err
}

// decodeEntry decodes any command entry. It returns either a *putEntry or
// a Command.
func decodeEntry(data []byte) (any, error) {
	d := &decoder{b: data}
	ver, typ := d.u8(), CommandType(d.u8())
	d.u16()
	if d.err != nil {
		return nil, d.err
	}
	if ver != CommandVersion {
		return nil, fmt.Errorf("%w: version %d", ErrUnknownCommand, ver)
	}
	if typ == CmdPutMessages {
		return decodePut(d)
	}
	c, err := decodeMeta(typ, d)
	if err != nil {
		return nil, err
	}
	return c, d.end()
}
