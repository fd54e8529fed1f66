package dledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// The binary AppendEntries layout (frozen). Every integer is big-endian.
//
// Request, after the RPC type byte rpcAppendBinary:
//
//	+---------+------+----------+----------+-----------+
//	| version | term | prevLog  | prevTerm | commitIdx |   u8, 4 × u64
//	+---------+------+----------+----------+-----------+
//	| idLen u16 | id | addrLen u16 | addr |
//	+-------------+------------+
//	| entries u32 | blobLen u64 |
//	+-------------+------------+
//	| entries × header: index u64, term u64, type u8,            |
//	|   appendedAt i64 (Unix ns, 0 = zero time), dataLen u32,    |
//	|   extLen u32                                  (33 bytes)   |
//	+------------------------------------------------------------+
//	| blob: entry 0's data, its extensions, entry 1's data, …    |
//	+------------------------------------------------------------+
//
// The deprecated Leader field is not carried: raft fills RPCHeader.Addr,
// which is what it reads. The headers come before every byte of data, so the receiver allocates
// one buffer for all entries' data and reads it with one read; the sender
// writes the data from the entries' own slices (writev on plain TCP).
//
// Response:
//
//	| errLen u32 | err | version u8 | idLen u16 | id | addrLen u16 | addr |
//	| term u64 | lastLog u64 | flags u8 (1 success, 2 noRetryBackoff) |
const (
	appendFixedLen   = 1 + 4*8
	entryHeaderLen   = 8 + 8 + 1 + 8 + 4 + 4
	flagSuccess      = 1
	flagNoRetry      = 2
	maxAppendEntries = 1 << 20
	// maxAppendBlob bounds one request's data, so a corrupt or hostile
	// length cannot make the receiver allocate without limit.
	maxAppendBlob  = 1 << 30
	maxHeaderField = 1 << 12
)

// errBadAppend is a binary AppendEntries that does not decode.
var errBadAppend = errors.New("dledger: malformed binary AppendEntries")

// appendAppendRequest appends the request's header part — everything but
// the blob — after the RPC type byte to b.
func appendAppendRequest(b []byte, req *raft.AppendEntriesRequest) []byte {
	b = append(b, rpcAppendBinary, byte(req.ProtocolVersion))
	b = binary.BigEndian.AppendUint64(b, req.Term)
	b = binary.BigEndian.AppendUint64(b, req.PrevLogEntry)
	b = binary.BigEndian.AppendUint64(b, req.PrevLogTerm)
	b = binary.BigEndian.AppendUint64(b, req.LeaderCommitIndex)
	b = appendField(b, req.ID)
	b = appendField(b, req.Addr)
	b = binary.BigEndian.AppendUint32(b, uint32(len(req.Entries)))
	b = binary.BigEndian.AppendUint64(b, uint64(blobLen(req.Entries)))
	for _, e := range req.Entries {
		b = binary.BigEndian.AppendUint64(b, e.Index)
		b = binary.BigEndian.AppendUint64(b, e.Term)
		b = append(b, byte(e.Type))
		var at int64
		if !e.AppendedAt.IsZero() {
			at = e.AppendedAt.UnixNano()
		}
		b = binary.BigEndian.AppendUint64(b, uint64(at))
		b = binary.BigEndian.AppendUint32(b, uint32(len(e.Data)))
		b = binary.BigEndian.AppendUint32(b, uint32(len(e.Extensions)))
	}
	return b
}

func appendField(b, f []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(f)))
	return append(b, f...)
}

// blobLen is the size of the entries' data and extensions.
func blobLen(entries []*raft.Log) int {
	n := 0
	for _, e := range entries {
		n += len(e.Data) + len(e.Extensions)
	}
	return n
}

// checkAppendRequest reports a request the layout cannot carry.
func checkAppendRequest(req *raft.AppendEntriesRequest) error {
	if len(req.ID) > maxHeaderField || len(req.Addr) > maxHeaderField {
		return fmt.Errorf("dledger: AppendEntries header field over %d bytes", maxHeaderField)
	}
	if len(req.Entries) > maxAppendEntries || blobLen(req.Entries) > maxAppendBlob {
		return fmt.Errorf("dledger: AppendEntries of %d entries, %d bytes: over the transport's bounds", len(req.Entries), blobLen(req.Entries))
	}
	return nil
}

// byteReader is what the decoders read from: a bufio.Reader.
type byteReader interface {
	io.Reader
	io.ByteReader
}

// readAppendRequest reads one request after its type byte. scratch is
// reused for the entry headers; the entries' data share one new buffer,
// which raft may keep (its log cache holds the entries).
func readAppendRequest(r byteReader, scratch *[]byte) (*raft.AppendEntriesRequest, error) {
	var fixed [appendFixedLen]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return nil, err
	}
	req := &raft.AppendEntriesRequest{}
	req.ProtocolVersion = raft.ProtocolVersion(fixed[0])
	req.Term = binary.BigEndian.Uint64(fixed[1:])
	req.PrevLogEntry = binary.BigEndian.Uint64(fixed[9:])
	req.PrevLogTerm = binary.BigEndian.Uint64(fixed[17:])
	req.LeaderCommitIndex = binary.BigEndian.Uint64(fixed[25:])
	var err error
	if req.ID, err = readField(r); err != nil {
		return nil, err
	}
	if req.Addr, err = readField(r); err != nil {
		return nil, err
	}
	var counts [12]byte
	if _, err := io.ReadFull(r, counts[:]); err != nil {
		return nil, err
	}
	n, blob := binary.BigEndian.Uint32(counts[:]), binary.BigEndian.Uint64(counts[4:])
	if n > maxAppendEntries || blob > maxAppendBlob {
		return nil, fmt.Errorf("%w: %d entries, %d bytes", errBadAppend, n, blob)
	}
	if n == 0 {
		if blob != 0 {
			return nil, fmt.Errorf("%w: data without entries", errBadAppend)
		}
		return req, nil
	}
	req.Entries, err = readEntries(r, int(n), int(blob), scratch)
	return req, err
}

// readEntries reads n entry headers and the blob of their data.
func readEntries(r byteReader, n, blob int, scratch *[]byte) ([]*raft.Log, error) {
	need := n * entryHeaderLen
	if cap(*scratch) < need {
		*scratch = make([]byte, need)
	}
	hdr := (*scratch)[:need]
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err
	}
	logs := make([]raft.Log, n)
	ptrs := make([]*raft.Log, n)
	sum := 0
	for i := range logs {
		h := hdr[i*entryHeaderLen:]
		l := &logs[i]
		l.Index, l.Term, l.Type = binary.BigEndian.Uint64(h), binary.BigEndian.Uint64(h[8:]), raft.LogType(h[16])
		if at := int64(binary.BigEndian.Uint64(h[17:])); at != 0 {
			l.AppendedAt = time.Unix(0, at)
		}
		sum += int(binary.BigEndian.Uint32(h[25:])) + int(binary.BigEndian.Uint32(h[29:]))
		if sum > blob {
			return nil, fmt.Errorf("%w: entry lengths exceed the blob (%d bytes)", errBadAppend, blob)
		}
		ptrs[i] = l
	}
	if sum != blob {
		return nil, fmt.Errorf("%w: entries hold %d of the blob's %d bytes", errBadAppend, sum, blob)
	}
	buf := make([]byte, blob)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	for i, l := range ptrs {
		h := hdr[i*entryHeaderLen:]
		l.Data, buf = cut(buf, int(binary.BigEndian.Uint32(h[25:])))
		l.Extensions, buf = cut(buf, int(binary.BigEndian.Uint32(h[29:])))
	}
	return ptrs, nil
}

// cut splits the first n bytes off b (nil for none), capacity clipped so
// an append to one entry's data cannot overwrite the next.
func cut(b []byte, n int) (head, rest []byte) {
	if n == 0 {
		return nil, b
	}
	return b[:n:n], b[n:]
}

func readField(r byteReader) ([]byte, error) {
	var l [2]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(l[:]))
	if n > maxHeaderField {
		return nil, fmt.Errorf("%w: header field of %d bytes", errBadAppend, n)
	}
	if n == 0 {
		return nil, nil
	}
	f := make([]byte, n)
	_, err := io.ReadFull(r, f)
	return f, err
}

// appendAppendResponse appends the response to an AppendEntries (or the
// error string raft's handler answered) to b.
func appendAppendResponse(b []byte, resp *raft.AppendEntriesResponse, rpcErr string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(rpcErr)))
	b = append(b, rpcErr...)
	if resp == nil {
		resp = &raft.AppendEntriesResponse{}
	}
	b = append(b, byte(resp.ProtocolVersion))
	b = appendField(b, resp.ID)
	b = appendField(b, resp.Addr)
	b = binary.BigEndian.AppendUint64(b, resp.Term)
	b = binary.BigEndian.AppendUint64(b, resp.LastLog)
	var flags byte
	if resp.Success {
		flags |= flagSuccess
	}
	if resp.NoRetryBackoff {
		flags |= flagNoRetry
	}
	return append(b, flags)
}

// maxRPCError bounds the error string of a response.
const maxRPCError = 1 << 16

// readAppendResponse reads a response into resp and returns the error
// string the peer's raft answered ("" for none).
func readAppendResponse(r byteReader, resp *raft.AppendEntriesResponse) (string, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return "", err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > maxRPCError {
		return "", fmt.Errorf("%w: error string of %d bytes", errBadAppend, n)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return "", err
	}
	v, err := r.ReadByte()
	if err != nil {
		return "", err
	}
	resp.ProtocolVersion = raft.ProtocolVersion(v)
	if resp.ID, err = readField(r); err != nil {
		return "", err
	}
	if resp.Addr, err = readField(r); err != nil {
		return "", err
	}
	var rest [17]byte
	if _, err := io.ReadFull(r, rest[:]); err != nil {
		return "", err
	}
	resp.Term, resp.LastLog = binary.BigEndian.Uint64(rest[:]), binary.BigEndian.Uint64(rest[8:])
	resp.Success, resp.NoRetryBackoff = rest[16]&flagSuccess != 0, rest[16]&flagNoRetry != 0
	return string(msg), nil
}
