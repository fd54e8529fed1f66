package indexfile

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/internal/vfs"
)

// Format constants (frozen: they are the on-disk format).
const (
	// HeaderSize is the size of a file header.
	HeaderSize = 40
	// SlotSize is the size of one hash slot.
	SlotSize = 4
	// EntrySize is the size of one index entry.
	EntrySize = 20
	// DefaultSlotNum is RocketMQ's hash slots per file.
	DefaultSlotNum = 5_000_000
	// DefaultIndexNum is RocketMQ's entries per file.
	DefaultIndexNum = 20_000_000
	// nameLayout is yyyyMMddHHmmssSSS once the dot is removed.
	nameLayout = "20060102150405.000"
	nameLen    = 17
)

// Sentinel errors. Returned errors wrap them; test with errors.Is.
var (
	ErrInvalidConfig = errors.New("indexfile: invalid config")
	ErrCorrupt       = errors.New("indexfile: corrupt index file")
	ErrClosed        = errors.New("indexfile: store closed")
)

// Config configures a Store.
type Config struct {
	// Dir is the index directory (RocketMQ's store/index).
	Dir string
	// FS is the file system; default vfs.OS.
	FS vfs.FS
	// SlotNum is the number of hash slots per file; default 5,000,000.
	SlotNum int
	// IndexNum is the number of entries per file, entry 0 included (it is
	// never used); default 20,000,000. SlotNum and IndexNum are part of
	// the format: reopening with other values fails.
	IndexNum int
	// Logger receives file creation, recovery and deletion; default discards.
	Logger hclog.Logger
	// Now names new files; default time.Now.
	Now func() time.Time
}

// DefaultConfig returns a Config with RocketMQ's geometry on the OS file
// system; the caller sets Dir.
func DefaultConfig() Config {
	return Config{
		FS:       vfs.OS,
		SlotNum:  DefaultSlotNum,
		IndexNum: DefaultIndexNum,
		Logger:   hclog.NewNullLogger(),
		Now:      time.Now,
	}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, a...)...))
	}
	if c.Dir == "" {
		bad("Dir is empty")
	}
	if c.FS == nil {
		bad("FS is nil")
	}
	if c.SlotNum <= 0 || c.SlotNum > math.MaxInt32 {
		bad("SlotNum %d not in [1, MaxInt32]", c.SlotNum)
	}
	if c.IndexNum < 2 || c.IndexNum > math.MaxInt32 {
		bad("IndexNum %d not in [2, MaxInt32]", c.IndexNum)
	}
	if c.Logger == nil {
		bad("Logger is nil")
	}
	if c.Now == nil {
		bad("Now is nil")
	}
	return errors.Join(errs...)
}

func (c Config) fileSize() int64 {
	return HeaderSize + int64(c.SlotNum)*SlotSize + int64(c.IndexNum)*EntrySize
}
