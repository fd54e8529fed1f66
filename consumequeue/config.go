package consumequeue

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/internal/vfs"
)

// Format constants (frozen: they are the on-disk format).
const (
	// EntrySize is the size of one consumequeue entry in bytes.
	EntrySize = 20
	// DefaultEntriesPerFile is RocketMQ's entries per consumequeue file.
	DefaultEntriesPerFile = 300_000
	// nameDigits is the width of a file name.
	nameDigits = 20
)

// Sentinel errors. Returned errors wrap them; test with errors.Is.
var (
	ErrOffsetOutOfRange = errors.New("consumequeue: offset out of range")
	// ErrMismatch is what a stored entry that differs from the one being
	// replayed is; Append repairs it rather than returning it.
	ErrMismatch      = errors.New("consumequeue: entry differs from the stored one")
	ErrGap           = errors.New("consumequeue: append beyond the end of the queue")
	ErrOutOfOrder    = errors.New("consumequeue: commit offset does not increase")
	ErrInvalidEntry  = errors.New("consumequeue: invalid entry")
	ErrNotEmpty      = errors.New("consumequeue: queue is not empty")
	ErrInvalidTopic  = errors.New("consumequeue: invalid topic name")
	ErrCorrupt       = errors.New("consumequeue: corrupt queue directory")
	ErrClosed        = errors.New("consumequeue: store closed")
	ErrInvalidConfig = errors.New("consumequeue: invalid config")
)

// Config configures a Store.
type Config struct {
	// Dir is the consumequeue root (RocketMQ's store/consumequeue).
	Dir string
	// FS is the file system; default vfs.OS.
	FS vfs.FS
	// EntriesPerFile is the number of entries per file; default 300,000.
	// It is part of the on-disk format: reopening with another value fails.
	EntriesPerFile int
	// Logger receives recovery and retention events; default discards.
	Logger hclog.Logger
}

// DefaultConfig returns a Config with RocketMQ's geometry on the OS file
// system; the caller sets Dir.
func DefaultConfig() Config {
	return Config{FS: vfs.OS, EntriesPerFile: DefaultEntriesPerFile, Logger: hclog.NewNullLogger()}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, fmt.Errorf("%w: Dir is empty", ErrInvalidConfig))
	}
	if c.FS == nil {
		errs = append(errs, fmt.Errorf("%w: FS is nil", ErrInvalidConfig))
	}
	if c.EntriesPerFile <= 0 {
		errs = append(errs, fmt.Errorf("%w: EntriesPerFile %d must be > 0", ErrInvalidConfig, c.EntriesPerFile))
	}
	if c.Logger == nil {
		errs = append(errs, fmt.Errorf("%w: Logger is nil", ErrInvalidConfig))
	}
	return errors.Join(errs...)
}
