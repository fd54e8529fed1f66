// Package indexfile is the hash index of message keys: for every KEYS
// entry and UNIQ_KEY of a message the dledger FSM puts "topic#key" with the
// message's commit offset and store time, and a query by key and time
// range returns the commit offsets of the matching messages, newest first.
// Like the consumequeue it is derived from the commitlog and can be
// rebuilt from it.
//
// # On-disk format (frozen; RocketMQ's store/index)
//
// A store is a directory of index files named by their creation time,
// yyyyMMddHHmmssSSS (e.g. 20261202131644123), in the Config.Now location.
// A new file starts when the newest one is full. Each file is
//
//	+--------------------+----------------------------+------------------------------+
//	| header (40 bytes)  | SlotNum slots × 4 bytes    | IndexNum entries × 20 bytes  |
//	+--------------------+----------------------------+------------------------------+
//
// created at its full size with Truncate, so it is sparse: with the default
// geometry (5,000,000 slots, 20,000,000 entries) it is 420,000,040 bytes
// long but allocates only what was written. All integers are big-endian.
//
//	header:
//	 0                8                16               24               32      36      40
//	+----------------+----------------+----------------+----------------+-------+-------+
//	| beginTimestamp | endTimestamp   | beginPhyOffset | endPhyOffset   | slot  | index |
//	| int64 ms       | int64 ms       | int64          | int64          | count | count |
//	+----------------+----------------+----------------+----------------+-------+-------+
//
//	slot n (at 40 + n×4):   int32, the number of the newest entry whose key hash
//	                        falls in slot n; 0 = empty.
//
//	entry m (at 40 + SlotNum×4 + m×20):
//	 0          4                 12         16         20
//	+----------+-----------------+----------+----------+
//	| key hash | commit offset   | timeDiff | prev     |
//	| int32    | int64           | int32 s  | int32    |
//	+----------+-----------------+----------+----------+
//
// Commit offsets are the logical offsets of DESIGN.md §4 (RocketMQ's
// phyOffset). The key hash is Java's String.hashCode of the key (over
// UTF-16), made non-negative with abs (Integer.MIN_VALUE becomes 0); the
// slot is keyHash % SlotNum. timeDiff is (storeTimestamp - beginTimestamp)
// / 1000, whole seconds since the file's first entry, clamped to
// [0, MaxInt32]. prev is the entry previously at the head of the slot, so
// each slot heads a chain from newest to oldest. Entry 0 is never used
// (0 means "none"), so indexCount starts at 1 and a file holds
// IndexNum-1 entries; slotCount counts the non-empty slots.
//
// # Durability and recovery
//
// Puts write entry and slot through the page cache; the header is kept in
// memory. Flush syncs the file, then writes the header and syncs again, so
// a header on disk never counts entries that are not. After a crash Open
// trusts the entries below the header's indexCount: if a slot points at a
// later (untrusted) entry, the slots of that file are rebuilt from its
// trusted entries. Raft's replay re-puts what was lost. Verify checks
// every file (header counts, entry ranges, prev links within a slot, slot
// heads) for a torn page or flipped bit; the message store then Resets
// the index and puts every message's keys again from the commitlog. A
// header no put could write (counts beyond the geometry) drops its file
// at Open rather than failing it.
//
// # Queries
//
// Different keys can share a hash, and a store time is known to the second
// only, so Query returns candidates: the caller reads each message from the
// commitlog and checks its key (and, if it matters, its exact store time).
package indexfile
