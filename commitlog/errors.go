package commitlog

import "errors"

// Sentinel errors. Callers test them with errors.Is; the package wraps them
// with the index, offset or file concerned.
var (
	// ErrClosed is returned by every call on a closed Log.
	ErrClosed = errors.New("commitlog: log closed")
	// ErrCorrupt marks a record or file whose length or CRC check failed.
	// Corrupt bytes are never returned as data.
	ErrCorrupt = errors.New("commitlog: corrupt record")
	// ErrNonContiguous is returned by StoreLogs when a batch does not start
	// at LastIndex+1 (on a non-empty log) or has a gap inside it.
	ErrNonContiguous = errors.New("commitlog: non-contiguous index")
	// ErrMiddleRange is returned by DeleteRange for a range that touches
	// neither end of the log: a segmented log cannot punch holes.
	ErrMiddleRange = errors.New("commitlog: cannot delete a range from the middle of the log")
	// ErrDiskFull is returned by StoreLogs while disk usage is above
	// RetentionConfig.DiskRefuseRatio.
	ErrDiskFull = errors.New("commitlog: disk usage above 90%, writes refused")
	// ErrNoSpace is returned by StoreLogs (and DeleteRange) when the file
	// system has less than RetentionConfig.MinFreeBytes free or a write,
	// fallocate or ftruncate met ENOSPC or EDQUOT. It is a refusal, not a
	// failure: nothing of the batch stays in the files, and writes are
	// tried again once a free-space check finds space.
	ErrNoSpace = errors.New("commitlog: no space left on device, writes refused")
	// ErrOffsetNotFound is returned for a commit offset that lies in no
	// stored entry's message span.
	ErrOffsetNotFound = errors.New("commitlog: commit offset not found")
	// ErrCommitOffset is returned by StoreLogs when the SpanFunc reports a
	// commit offset below the end of the previous entry's messages.
	ErrCommitOffset = errors.New("commitlog: commit offset goes backwards")
	// ErrFailed is returned by writes after a write or fsync failed: the
	// state of the file after such a failure is unknown, so the Log stops
	// accepting writes until it is reopened and recovered.
	ErrFailed = errors.New("commitlog: log failed, reopen to recover")
	// ErrInvalidConfig is wrapped by every problem Config.Validate reports.
	ErrInvalidConfig = errors.New("commitlog: invalid config")
)
