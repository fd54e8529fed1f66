package remoting

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// DefaultMaxFrameSize bounds the frame length a reader accepts. It leaves
// room for a 4 MiB message body, batches and headers, while keeping one
// hostile length from allocating unbounded memory.
const DefaultMaxFrameSize = 16 << 20

// maxHeaderLen is the largest header the 24-bit length field can describe.
const maxHeaderLen = 1<<24 - 1

// frameWordLen is the size of the header-length word, the smallest frame.
const frameWordLen = 4

// Encode returns the command as a complete frame, length prefix included.
func Encode(cmd *Command) ([]byte, error) {
	return AppendEncode(nil, cmd)
}

// AppendEncode appends the command's complete frame to dst. On error dst is
// returned unchanged.
func AppendEncode(dst []byte, cmd *Command) ([]byte, error) {
	dst, err := appendFrameHead(dst, cmd)
	if err != nil {
		return dst, err
	}
	return append(dst, cmd.Body...), nil
}

// appendFrameHead appends the length words and header but not the body, so
// a connection can write a large body from where it lies.
func appendFrameHead(dst []byte, cmd *Command) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	var err error
	switch cmd.SerializeType {
	case SerializeJSON:
		dst = appendJSONHeader(dst, cmd)
	case SerializeRocketMQ:
		dst, err = appendRocketMQHeader(dst, cmd)
	default:
		err = fmt.Errorf("%w: unknown serialize type %d", ErrBadHeader, cmd.SerializeType)
	}
	if err != nil {
		return dst[:start], err
	}
	headerLen := len(dst) - start - 8
	if headerLen > maxHeaderLen {
		return dst[:start], fmt.Errorf("%w: header of %d bytes exceeds 24-bit length", ErrFrameTooLarge, headerLen)
	}
	total := frameWordLen + headerLen + len(cmd.Body)
	if total > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, total)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(cmd.SerializeType)<<24|uint32(headerLen))
	return dst, nil
}

// Decode parses one frame without its leading length word. The returned
// command's Body aliases frame.
func Decode(frame []byte) (*Command, error) {
	if len(frame) < frameWordLen {
		return nil, fmt.Errorf("%w: %d-byte frame has no header length", ErrMalformedFrame, len(frame))
	}
	word := binary.BigEndian.Uint32(frame)
	st := SerializeType(word >> 24)
	headerLen := int(word & maxHeaderLen)
	if headerLen > len(frame)-frameWordLen {
		return nil, fmt.Errorf("%w: header length %d in %d-byte frame", ErrMalformedFrame, headerLen, len(frame))
	}
	header := frame[frameWordLen : frameWordLen+headerLen]
	var cmd *Command
	var err error
	switch st {
	case SerializeJSON:
		cmd, err = decodeJSONHeader(header)
	case SerializeRocketMQ:
		cmd, err = decodeRocketMQHeader(header)
	default:
		err = fmt.Errorf("%w: unknown serialize type %d", ErrBadHeader, st)
	}
	if err != nil {
		return nil, err
	}
	if body := frame[frameWordLen+headerLen:]; len(body) > 0 {
		cmd.Body = body
	}
	return cmd, nil
}

// ReadCommand reads one frame from r and decodes it. maxFrame bounds the
// frame length (the value of the length word); 0 means
// DefaultMaxFrameSize. The length is checked before the frame is allocated.
// A clean end of stream before a frame returns io.EOF itself; a stream
// that ends inside a frame returns an error wrapping io.ErrUnexpectedEOF.
func ReadCommand(r io.Reader, maxFrame int) (*Command, error) {
	return readCommand(r, maxFrame, 0)
}

// readCommand is ReadCommand that also refuses, with ErrHeaderTooLarge, a
// header length above maxHeader (0: no limit but the frame's), checked
// before the frame is allocated or its header parsed.
func readCommand(r io.Reader, maxFrame, maxHeader int) (*Command, error) {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameSize
	}
	var words [8]byte
	if _, err := io.ReadFull(r, words[:4]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("remoting: read frame length: %w", err)
	}
	n := int32(binary.BigEndian.Uint32(words[:4]))
	if n < frameWordLen {
		return nil, fmt.Errorf("%w: frame length %d", ErrMalformedFrame, n)
	}
	if int64(n) > int64(maxFrame) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, maxFrame)
	}
	if _, err := io.ReadFull(r, words[4:]); err != nil {
		return nil, readFrameError(n, err)
	}
	if hl := int(binary.BigEndian.Uint32(words[4:]) & maxHeaderLen); maxHeader > 0 && hl > maxHeader {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrHeaderTooLarge, hl, maxHeader)
	}
	frame := make([]byte, n)
	copy(frame, words[4:])
	if _, err := io.ReadFull(r, frame[frameWordLen:]); err != nil {
		return nil, readFrameError(n, err)
	}
	return Decode(frame)
}

func readFrameError(n int32, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("remoting: read %d-byte frame: %w", n, err)
}

// WriteCommand encodes cmd and writes the frame with a single Write, so
// concurrent writers serialised by a lock never interleave partial frames.
func WriteCommand(w io.Writer, cmd *Command) error {
	frame, err := Encode(cmd)
	if err != nil {
		return err
	}
	if _, err := w.Write(frame); err != nil {
		return fmt.Errorf("remoting: write frame: %w", err)
	}
	return nil
}
