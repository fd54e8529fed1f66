// Package dledger is a broker group's Raft replication: one hashicorp/raft
// instance per broker node over a log store it is given (the message
// store's commitlog), a leader-side group-commit pipeline that assigns
// queue and commit offsets, and the FSM plumbing that applies committed
// entries: put entries to a Dispatcher (the store's consumequeue and
// index), every other command to a StateMachine (the broker group's
// metadata), both snapshotted together.
//
// dledger knows messages only as far as replication needs: a put entry's
// messages with their topic, queue, offsets, tag hash and index keys. What
// topics, consumer offsets or delay progress are is the StateMachine's
// business; dledger carries its commands as opaque bodies.
//
// # Offsets
//
// The leader assigns each message its queue offset and its logical commit
// offset (running sum of record sizes) when it coalesces proposals into an
// entry, and stamps them into the stored record, so log order is offset
// order. A node that becomes leader first runs a barrier (everything
// committed is applied) and loads its counters from the applied state; the
// counters of an old, uncommitted proposal never leak into a new term.
//
// Every replica checks the offsets on apply. Each put entry carries the
// term its counters belong to: if that is not the term raft appended the
// entry in, every replica rejects it identically (ErrStaleProposal,
// nothing stored). Within a term the leader's entries have no holes
// (Apply has no enqueue timeout, transfers run with nothing in flight), so
// an offset that differs from the applied state is divergence: the node
// logs it and stops (ErrDivergence), it never papers over it.
//
// # Entry encoding (frozen, version 2)
//
// All integers big-endian (package internal/wire). Strings are u16 length
// + bytes. Every entry:
//
//	+---------+--------+----------------+
//	| version | type   | reserved (0)   |   version = 2 (CommandVersion)
//	|   u8    |   u8   |      u16       |   type    = CommandType
//	+---------+--------+----------------+
//
// Put messages (type 1, the only type dledger owns):
//
//	+------------+--------------------+-------+---------+------------+
//	| term u64   | firstCommitOff i64 | n u32 | metaLen | payloadLen |
//	+------------+--------------------+-------+---------+------------+
//	| meta: n × { topic str, queueId i32, queueOffset i64,           |
//	|             commitOffset i64, size i32, tagsCode i64,          |
//	|             storeTimestamp i64, nKeys u16, nKeys × key str }   |
//	|       then side commands: u32 k × {type u8, len u32, body}     |
//	+-----------------------------------------------------------------+
//	| payload: the n stored message records, contiguous, in order    |
//	+-----------------------------------------------------------------+
//
// SpanFunc reads only the fixed part: payload starts at 32 + metaLen, and
// message i's commit offset is firstCommitOffset + the sizes before it.
// Side commands (PutMessagesCommand.With) are state-machine commands
// applied, in order, after the entry's messages.
//
// Every other type (2–255) is a state-machine command: the header is
// followed by the body its Command.AppendBody wrote, which the
// StateMachine decodes. An unknown version stops the node: skipping an
// entry would diverge. Version 1 entries (written before the state
// machine moved out of this package) are refused with a message saying
// so; such a data directory must be removed.
//
// # Snapshot encoding (frozen, version 2)
//
//	magic u32 "RMQS" | version u8 = 2 | appliedIndex u64 | commitNext i64 |
//	queues (u32 n × {topic str, queueId i32, nextOffset i64}, sorted) |
//	state machine (u32 len + its Snapshot bytes) |
//	crc32c u32 of all preceding bytes
//
// Snapshots hold metadata only; messages stay in the commitlog, whose
// retention (not raft compaction) deletes them. The snapshot a leader
// sends to a node that lags past the log (InstallSnapshot) carries, after
// the metadata, the commitlog records the leader still retains below it
// (history.go, framed as "RMQH" version 1); the receiving node imports
// them into its emptied log before it answers, rebuilds its consumequeues
// and index from them, and keeps them through raft's reset of the log
// after the install. So a node caught up by snapshot holds every message
// the others do, and may lead without skipping any.
//
// # Corrupt logs
//
// A log store that is a RecoveringLog (the commitlog) may come back from a
// restart shorter than what it acknowledged: its recovery cut a flipped
// bit or torn page out of the middle of the log. Until it holds those
// entries again the node neither grants votes nor asks for them nor takes
// a leadership transfer (voteGuard, in the transport; the safety argument
// is on the type), so it cannot help elect a leader that misses a
// committed entry. It still takes AppendEntries and snapshots to catch up.
//
// # Transport
//
// Peers talk over a transport of dledger's own (transport.go): raft's
// NetworkTransport protocol, except that AppendEntries has a binary
// layout (transport_codec.go, frozen, RPC type 0x10) in which the
// leader writes entries from their own buffers and a follower reads a
// request's data into one allocation. Votes, snapshots and TimeoutNow
// keep NetworkTransport's msgpack bytes, and msgpack AppendEntries from
// an older node are still served. Heartbeats go over a second, dial-only
// instance with a short deadline (heartbeat.go).
//
// # Timeouts
//
// DefaultConfig's 300 ms heartbeat/election and 250 ms leader lease
// replace a dead leader in roughly 0.4–0.9 s on a LAN; see Config.
package dledger
