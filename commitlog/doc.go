// Package commitlog is raftmq's storage engine: a segmented, CRC-checked
// log that is at the same time the Raft log of a broker node (it
// implements raft.LogStore and raft.MonotonicLogStore) and the store pulls
// read message bytes from. There is no second copy of the log; the raft
// StableStore holds only term and vote.
//
// # Files
//
// A directory holds, for every segment, a segment file and its entry index
// file, both named by the raft index of the segment's first entry, zero
// padded to 20 digits:
//
//	00000000000000000001.log   records of entries 1 .. 4711
//	00000000000000000001.idx   32-byte entry index records, one per entry
//	00000000000000004712.log   the active segment (the only unsealed one)
//	00000000000000004712.idx
//	next.tmp                   the preallocated next segment, not yet named
//	checkpoint                 last point known durable
//	abort                      exists while the log is open
//
// Names are raft indexes rather than byte positions because every lookup
// raft makes is by index, and because byte positions differ between
// replicas (a node restored from a snapshot starts its files later).
//
// # Segment record (frozen, little endian)
//
//	 0       4       8               16              24              32  33  34      38
//	+-------+-------+---------------+---------------+---------------+---+---+-------+------------+------------+
//	|length |crc32c | raft index    | raft term     | appendedAt    |typ|ver|extLen | extensions | data       |
//	|  u32  |  u32  |     u64       |     u64       | i64 unix ns   |u8 |u8 |  u32  | extLen B   | rest       |
//	+-------+-------+---------------+---------------+---------------+---+---+-------+------------+------------+
//	        <-------------------------------- length bytes ------------------------------------------------->
//
// length counts the bytes after the crc field (at least 30). The CRC32C
// (Castagnoli) covers the length field and those bytes, so a torn length
// is caught like torn data. appendedAt is math.MinInt64 for the zero time.
// ver is 1. A zero length field marks the end of data (a preallocated
// file reads as zeros).
//
// # Entry index record (frozen, 32 bytes, little endian)
//
//	 0               8       12      16      20              28      32
//	+---------------+-------+-------+-------+---------------+-------+
//	| record pos    |reclen |msgOff |msgLen | commit offset |crc32c |
//	|     i64       |  u32  |  u32  |  u32  |     i64       |  u32  |
//	+---------------+-------+-------+-------+---------------+-------+
//
// Record i of segment base is at (i-base)*32. msgOff is the first message
// byte counted from the record start, msgLen the message bytes (0: the
// entry holds none) and commit offset the logical offset of the first
// message byte as the SpanFunc reported it. An entry without messages
// records the running end, so the column never decreases and a binary
// search on "end of messages > offset" finds a commit offset's entry. The
// CRC covers bytes 0..27.
//
// # Checkpoint (frozen, 44 bytes, little endian)
//
//	 0       4       8               16              24              32              40      44
//	+-------+-------+---------------+---------------+---------------+---------------+-------+
//	| magic |version| segment base  | last index    | position      | commit end    |crc32c |
//	| RMCK  |   1   |     u64       |     u64       |     i64       |     i64       |  u32  |
//	+-------+-------+---------------+---------------+---------------+---------------+-------+
//
// Everything in segments before segment base, and segment base up to
// position (entries up to last index), was fsynced together with its entry
// index when the checkpoint was written. Segment base 0 means an empty
// log. It is replaced atomically: temp file, fsync, rename, fsync of the
// directory. It is written when a segment is sealed, when the log is
// truncated, at Close, and after each background flush in AsyncFlush.
//
// # Durability
//
// In SyncFlush (the default) StoreLogs writes the batch with one write and
// fsyncs the segment once before returning; the entry index is written but
// not synced, because recovery rebuilds it from the segment. In AsyncFlush
// StoreLogs returns after the write and a background flusher syncs every
// FlushInterval: entries acknowledged to clients are lost if a majority of
// the group loses power before the flush. After a failed write or fsync
// (StoreLogs's, a deferred one or a background flush's) the log refuses
// writes (ErrFailed) until reopened: what reached the disk is unknown, so
// the failed batch is not acknowledged, and a reopen may or may not show
// it. A failed fsync is never retried — after one the kernel may drop the
// dirty pages and report the next fsync as a success — and Close then
// writes no checkpoint and leaves the abort file, so the next Open scans
// the tail as after a crash. Failed and Err report the failure, so the
// process can restart rather than run on with a log that takes nothing.
//
// Running out of space is not such a failure (space.go): a write,
// fallocate or ftruncate that meets ENOSPC or EDQUOT cuts the segment and
// its entry index back to what is published and refuses the batch with
// ErrNoSpace, as StoreLogs does while fewer than
// RetentionConfig.MinFreeBytes are free; the refusal clears when a
// free-space check (every 200 ms) finds space. Segments are preallocated
// before they are written into. An fsync error stays sticky whatever its
// errno, including the ENOSPC of delayed allocation.
//
// With Config.DeferSync (dledger sets it on the raft leader) a SyncFlush
// StoreLogs writes the batch and returns before fsyncing it; a background
// syncer fsyncs at once, one fsync for every batch written meanwhile.
// DurableIndex says how far the fsyncs reached and WaitDurable waits for
// it; the caller must not count a deferred batch as durable before then.
// A failed deferred fsync is sticky like a failed StoreLogs.
//
// # Recovery
//
// Open always scans from the checkpoint to the end of the files (the
// abort file only says whether the last run crashed, which is logged):
// segments before the checkpoint's, and the checkpoint's segment up to
// it, are checked read-only (the CRC and index of every record), the rest
// is read record by record until a record's length, CRC or index is
// wrong, and so is any checked segment that fails. The tail from there is
// truncated and logged, and the entry index is rewritten for what was
// scanned. A record that goes bad while the log is open is never decoded:
// GetLog returns an error wrapping ErrCorrupt.
//
// # Corruption below the last index
//
// A cut is a torn tail when nothing intact follows it. When an intact
// record of a later index does follow (found through the entry index, or
// by searching the segment for a record header), or the checkpoint says
// the cut entries were synced, the cut removes entries the node may have
// acknowledged to a raft leader: before cutting, Open durably writes the
// recovering marker (file "recovering", below) with X, the highest such
// index. RecoveringThrough reports X until StoreLogs has made the log
// durable through X again, then the marker is removed. dledger keeps a
// recovering node out of elections meanwhile (dledger/voteguard.go).
//
//	 0       4       8               16      20
//	+-------+-------+---------------+-------+
//	| magic |version| through index |crc32c |   frozen, little endian
//	| RMRC  |   1   |     u64       |  u32  |
//	+-------+-------+---------------+-------+
//
// # Raft and DeleteRange
//
// StoreLogs on a non-empty log must continue at LastIndex+1; on an empty
// log it may start anywhere. DeleteRange truncates a suffix (max >=
// LastIndex) and, when it also covers FirstIndex, the whole log (raft does
// this after installing a snapshot on a MonotonicLogStore). Deleting a
// prefix is a no-op: retention removes whole sealed segments by age and
// disk watermarks, never past RetentionConfig.Floor (the last snapshot
// index), so FirstIndex is what is on disk. raft.Config.TrailingLogs must
// be above zero, or raft's compaction would be taken for a whole-log
// delete.
//
// # Reading messages
//
// The dledger package stores RocketMQ message records inside command
// entries and tells the log, through a SpanFunc, where they are and which
// commit offset they start at. ReadMessages maps each commit offset to its
// entry (binary search of the entry index, after trying the entry of the
// previous message and the one after it) and copies the bytes out.
// Segments are read through a shared read-only mmap (an active one mapped
// to the full segment size, so appends need no new mapping), which is
// unmapped only under the log's exclusive lock, while no reader copies
// from it. The first read of an
// entry checks the CRC of its whole record; the result is kept per segment
// for the life of the open log, so a pull pays it once per entry.
package commitlog
