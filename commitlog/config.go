package commitlog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/vfs"
)

// FlushMode says when StoreLogs makes a batch durable.
type FlushMode int

const (
	// SyncFlush fsyncs every batch before StoreLogs returns. Raft counts a
	// follower only after its StoreLogs returned, so an acknowledged entry
	// is on disk on a majority. This is the default.
	SyncFlush FlushMode = iota
	// AsyncFlush returns after the write and fsyncs every FlushInterval in
	// the background. An entry acknowledged to a client can be lost if a
	// majority of the group loses power before the next flush.
	AsyncFlush
)

// String names the mode as RocketMQ's flushDiskType does.
func (m FlushMode) String() string {
	switch m {
	case SyncFlush:
		return "SYNC_FLUSH"
	case AsyncFlush:
		return "ASYNC_FLUSH"
	default:
		return "FlushMode(" + strconv.Itoa(int(m)) + ")"
	}
}

// SpanFunc tells the log which bytes of an entry's Data are message records.
// It returns the logical commit offset of the first message byte, and the
// start and length of the contiguous message bytes within l.Data; ok is
// false for entries holding no messages. Commit offsets must not decrease in
// index order. The dledger package supplies it; nil means no entry holds
// messages.
type SpanFunc func(l *raft.Log) (firstCommitOffset int64, msgStart, msgLen int, ok bool)

// RetentionConfig decides when sealed segments are deleted. The defaults
// follow RocketMQ's fileReservedTime, deleteWhen and disk watermarks.
type RetentionConfig struct {
	// FileReservedTime is how long a sealed segment is kept after its last
	// write. Default 72h.
	FileReservedTime time.Duration
	// DeleteWhen lists the hours of the day (local time, "04" or "04;16")
	// at which expired segments are deleted. Default "04".
	DeleteWhen string
	// DiskWarnRatio: above it expired segments are deleted at any hour.
	// Default 0.75.
	DiskWarnRatio float64
	// DiskForceRatio: above it the oldest segments are deleted whatever
	// their age. Default 0.85.
	DiskForceRatio float64
	// DiskRefuseRatio: above it StoreLogs returns ErrDiskFull. Default 0.90.
	DiskRefuseRatio float64
	// CheckInterval is the period of the background retention check that
	// Open starts; 0 disables it (RunRetentionOnce still works). Default 10s.
	CheckInterval time.Duration
	// DiskUsage returns the used fraction of the file system holding dir.
	// Default: statfs.
	DiskUsage func(dir string) (float64, error)
	// MinFreeBytes: while fewer bytes than this are free on the file
	// system holding Dir, StoreLogs refuses writes with ErrNoSpace. It is
	// checked every 200ms (a batch reads the cached result) and keeps
	// room for what the node writes besides the commitlog (consume queues,
	// the index, raft's term and vote), which do not survive ENOSPC as
	// the commitlog does, and for file systems that report ENOSPC only at
	// fsync (ext4 delayed allocation), which stays fatal. 0 turns the
	// margin off; a real ENOSPC is still a refusal. Default 64 MiB.
	MinFreeBytes int64
	// FreeBytes returns the free bytes of the file system holding dir for
	// MinFreeBytes; an error means unknown, which refuses nothing. nil
	// means statfs.
	FreeBytes func(dir string) (int64, error)
	// Floor returns the highest raft index that may be deleted: dledger
	// passes its last snapshot index (Log.SetRetentionFloor) so raft can
	// always replay from its snapshot. A segment holding any index above Floor is kept. Nil means
	// 0: retention deletes nothing.
	Floor func() uint64
}

// Config configures a Log.
type Config struct {
	// Dir holds the segment, index, checkpoint and abort files.
	Dir string
	// FS is the file system; default vfs.OS.
	FS vfs.FS
	// SegmentSize is the size at which a segment is sealed and the next one
	// started. A single batch larger than it gets a segment of its own.
	// Default 1 GiB.
	SegmentSize int64
	// FlushMode: SyncFlush (default) or AsyncFlush.
	FlushMode FlushMode
	// FlushInterval is the background flush period in AsyncFlush. Default
	// 500ms.
	FlushInterval time.Duration
	// DeferSync, when set, is asked by every StoreLogs in SyncFlush: true
	// means the batch is written and StoreLogs returns before its fsync,
	// which a background syncer makes at once (one fsync for every batch
	// written meanwhile); DurableIndex and WaitDurable tell when it is on
	// disk. The caller must not count such a batch as durable before then.
	// dledger sets it (Log.SetDeferSync, once its raft node exists) to
	// "this node is the leader", which then writes its own copy in
	// parallel with replicating it (the Raft thesis, §10.2.1).
	DeferSync func() bool
	// Span locates message records inside entries; nil: none do. Recovery
	// calls it again for the entries it rescans, so every Open of a
	// directory must pass the same function.
	Span SpanFunc
	// Retention configures segment deletion.
	Retention RetentionConfig
	// OnSync, if set, is told of every fsync that makes entries durable
	// (SyncFlush): how long it took and how many entries it covered.
	OnSync func(d time.Duration, entries int)
	// Logger receives the log's events; it is Named("commitlog"). Default
	// a null logger.
	Logger hclog.Logger
}

// DefaultConfig returns a Config with every default set except Dir.
func DefaultConfig() Config {
	return Config{
		FS:            vfs.OS,
		SegmentSize:   1 << 30,
		FlushMode:     SyncFlush,
		FlushInterval: 500 * time.Millisecond,
		Retention: RetentionConfig{
			FileReservedTime: 72 * time.Hour,
			DeleteWhen:       "04",
			DiskWarnRatio:    0.75,
			DiskForceRatio:   0.85,
			DiskRefuseRatio:  0.90,
			CheckInterval:    10 * time.Second,
			DiskUsage:        statfsUsage,
			MinFreeBytes:     DefaultMinFreeBytes,
			FreeBytes:        statfsFree,
		},
		Logger: hclog.NewNullLogger(),
	}
}

// DefaultMinFreeBytes is the default RetentionConfig.MinFreeBytes.
const DefaultMinFreeBytes = 64 << 20

// minSegmentSize keeps a segment able to hold at least a small record.
const minSegmentSize = 4096

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
	if c.SegmentSize < minSegmentSize {
		bad("SegmentSize %d below %d", c.SegmentSize, minSegmentSize)
	}
	if c.FlushMode != SyncFlush && c.FlushMode != AsyncFlush {
		bad("unknown FlushMode %d", int(c.FlushMode))
	}
	if c.FlushMode == AsyncFlush && c.FlushInterval <= 0 {
		bad("FlushInterval %v must be positive in ASYNC_FLUSH", c.FlushInterval)
	}
	if c.Logger == nil {
		bad("Logger is nil")
	}
	errs = append(errs, c.Retention.validate()...)
	return errors.Join(errs...)
}

func (r RetentionConfig) validate() []error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: Retention."+format, append([]any{ErrInvalidConfig}, a...)...))
	}
	if r.FileReservedTime <= 0 {
		bad("FileReservedTime %v must be positive", r.FileReservedTime)
	}
	if _, err := parseDeleteWhen(r.DeleteWhen); err != nil {
		bad("DeleteWhen: %v", err)
	}
	if !(0 < r.DiskWarnRatio && r.DiskWarnRatio <= r.DiskForceRatio &&
		r.DiskForceRatio <= r.DiskRefuseRatio && r.DiskRefuseRatio <= 1) {
		bad("disk ratios must satisfy 0 < warn %v <= force %v <= refuse %v <= 1",
			r.DiskWarnRatio, r.DiskForceRatio, r.DiskRefuseRatio)
	}
	if r.CheckInterval < 0 {
		bad("CheckInterval %v is negative", r.CheckInterval)
	}
	if r.DiskUsage == nil {
		bad("DiskUsage is nil")
	}
	if r.MinFreeBytes < 0 {
		bad("MinFreeBytes %d is negative", r.MinFreeBytes)
	}
	return errs
}

// parseDeleteWhen parses "04;16" into a set of hours.
func parseDeleteWhen(s string) ([24]bool, error) {
	var hours [24]bool
	if strings.TrimSpace(s) == "" {
		return hours, errors.New("no hour given")
	}
	for _, part := range strings.Split(s, ";") {
		h, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || h < 0 || h > 23 {
			return hours, fmt.Errorf("%q is not an hour 00-23", part)
		}
		hours[h] = true
	}
	return hours, nil
}
