package message

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
)

// SysFlag bits of the stored layout and of send headers. Frozen.
const (
	SysFlagCompressed          int32 = 0x1
	SysFlagMultiTags           int32 = 0x2
	SysFlagTransactionPrepared int32 = 0x4
	SysFlagTransactionCommit   int32 = 0x8
	SysFlagTransactionRollback int32 = 0xc
	SysFlagBornHostV6          int32 = 0x10
	SysFlagStoreHostV6         int32 = 0x20

	// sysFlagTransactionMask covers the two transaction bits; rollback is
	// both set, so it doubles as the mask, as in the Java source.
	sysFlagTransactionMask = SysFlagTransactionRollback
)

// Compression defaults of the RocketMQ clients.
const (
	// CompressThreshold is the body size from which producers compress.
	CompressThreshold = 4 * 1024
	// DefaultCompressLevel is the zlib level producers use by default.
	DefaultCompressLevel = 5
)

// TransactionValue returns the transaction state bits of sysFlag: 0 (not
// transactional), SysFlagTransactionPrepared, SysFlagTransactionCommit or
// SysFlagTransactionRollback.
func TransactionValue(sysFlag int32) int32 {
	return sysFlag & sysFlagTransactionMask
}

// SetTransactionValue returns sysFlag with its transaction bits replaced by
// value, as the broker does when it turns a half message into a real one.
func SetTransactionValue(sysFlag, value int32) int32 {
	return sysFlag&^sysFlagTransactionMask | value&sysFlagTransactionMask
}

// Compress returns body as a zlib stream (RFC 1950) at level 1..9, which is
// what the clients put on the wire when they set SysFlagCompressed.
func Compress(body []byte, level int) ([]byte, error) {
	if level < zlib.BestSpeed || level > zlib.BestCompression {
		return nil, fmt.Errorf("%w: level %d not in 1..9", ErrCompress, level)
	}
	var buf bytes.Buffer
	w, err := zlib.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompress, err)
	}
	if _, err := w.Write(body); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompress, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompress, err)
	}
	return buf.Bytes(), nil
}

// Decompress inflates a zlib stream, refusing to produce more than max bytes
// so that a small hostile body (a zip bomb) costs an error, not the heap.
func Decompress(b []byte, max int) ([]byte, error) {
	max = clampNonNegative(max)
	r, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompress, err)
	}
	defer r.Close()
	// Guess from the input but cap the guess: the input says nothing
	// trustworthy about the output size.
	var buf bytes.Buffer
	buf.Grow(min(max, 4*len(b)+64))
	n, err := io.Copy(&buf, io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompress, err)
	}
	if n > int64(max) {
		return nil, fmt.Errorf("%w: decompressed body exceeds %d bytes", ErrBodyTooLarge, max)
	}
	return buf.Bytes(), nil
}

func clampNonNegative(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
