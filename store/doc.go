// Package store is the message store of one broker node: RocketMQ's
// DefaultMessageStore on top of a raft-replicated log. It opens, from one
// Config, the commitlog (which is the raft log: dledger gets it as its
// raft.LogStore), the consumequeues and the key index; it is dledger's
// Dispatcher, so every committed put entry lands in the consumequeues and
// the index on every replica and wakes the pulls held for the queues that
// grew; and it answers what RocketMQ's store answers: GetMessage (a pull's
// read, with RocketMQ's GetMessageStatus), queue bounds, search by time,
// records by commit offset, lookups by key. It also owns retention's
// consequence for the queues: their start follows the oldest message the
// commitlog still holds.
//
// Layout under Config.Dir:
//
//	commitlog/     segment files (the raft log; commitlog's format)
//	consumequeue/  topic/queueId/ files of 20-byte entries
//	index/         hash-slot index files of keys and unique keys
//
// The consumequeue and the index are derived data: the raft log is the
// durable copy, they are synced before every raft snapshot (Sync), and
// raft's replay after a restart fills in what a crash lost. Damage that
// the replay does not reach (a torn page or flipped bit anywhere) is found
// at Open, which holds every consumequeue entry against the commitlog's
// put entries and verifies the index, and is repaired from the log
// (repair.go): a queue is cut at its first bad entry and refilled from
// committed entries only, a damaged index is rebuilt. Never fatal.
package store
