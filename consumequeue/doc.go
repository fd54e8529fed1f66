// Package consumequeue is the per-queue index of the commitlog: for every
// topic and queue id it maps a queue offset (the n-th message of that queue)
// to the message's logical commit offset, its size and its tag hash. The
// dledger FSM fills it from committed entries (RocketMQ's "dispatch"), pull
// requests read it, and it can always be rebuilt from the commitlog with
// Rebuild, so it is a cache of the log and not a second source of truth.
//
// # On-disk format (frozen)
//
// Directory layout, as RocketMQ's store/consumequeue:
//
//	<Dir>/<topic>/<queueId>/00000000000000000000
//	                        00000000000006000000
//	                        00000000000012000000   ...
//
// Each file holds EntriesPerFile entries (default 300,000, so 6,000,000
// bytes). A file's name is the byte offset of its first entry in the
// queue's virtual concatenation of files, that is
// firstQueueOffset × EntrySize, zero-padded to 20 decimal digits — exactly
// RocketMQ's naming, so file names step by EntriesPerFile × 20.
// Files are created at full size with Truncate, so they are sparse until
// written.
//
// Every entry is EntrySize (20) bytes, big-endian:
//
//	 0               8      12              20
//	+---------------+------+---------------+
//	| commit offset | size | tags code     |
//	|    int64      | int32|    int64      |
//	+---------------+------+---------------+
//
// Entry i of a queue (queue offset i) lives in file (i / EntriesPerFile) at
// byte (i % EntriesPerFile) × 20. Commit offsets are the logical offsets of
// DESIGN.md §4 (a running sum of record sizes), identical on every replica.
// An entry is valid when size > 0 and its commit offset is >= 0 and greater
// than its predecessor's; an all-zero entry marks unwritten space.
//
// # Recovery
//
// Open loads every <topic>/<queueId> directory. The queue's minimum is its
// first valid entry; its maximum is found by scanning the last two files
// forward and stopping at the first invalid entry (a torn or unwritten
// entry, or one whose commit offset does not increase). Whatever follows the
// maximum is zeroed, later files are removed. Earlier files are trusted: a
// file is only followed by another one once it was full. A lost tail is
// harmless because raft replays committed entries and Append is idempotent.
// Entries are synced only before raft snapshots, and 20-byte entries
// straddle 4 KiB pages, so after a power loss an entry in the replayed range
// may be torn or stale yet look valid, in any file: the replay, which is the
// truth, finds it different and Append rewrites the queue from there with
// a warning (durably) instead of failing — never fatal. Damage outside
// the replayed range (a torn page or flipped bit in any file) is found by
// the message store, which holds every entry against the commitlog at
// Open, cuts the queue with Truncate and refills it from the log.
//
// MinOffset after Open is the first entry still on disk, which can be lower
// than the minimum before the restart (CorrectMinOffset does not delete
// entries inside a retained file): the broker calls CorrectMinOffset with
// the commitlog's minimum after Open, as RocketMQ does. An empty queue
// reopens at the start of its last file.
//
// # Offsets
//
// MinOffset is the first readable queue offset and MaxOffset the next one
// to be written. Append is idempotent (see Queue.Append); a queue that must
// start at a non-zero offset (after a snapshot restore, or a rebuild from a
// commitlog whose head was deleted) gets it from SetMinOffset while empty.
//
// Concurrency: one goroutine (the FSM) writes; any number read. All
// methods are safe for concurrent use.
package consumequeue
