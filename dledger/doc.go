// Package dledger is a broker group's Raft replication: one
// hashicorp/raft instance per broker node whose log store is the
// commitlog, an FSM that applies committed commands to the group's
// metadata and dispatches messages to the consumequeue and index sinks,
// and a leader-side group-commit pipeline that assigns queue and commit
// offsets.
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
// # Entry encoding (frozen, version 1)
//
// All integers big-endian. Strings are u16 length + bytes. Every entry:
//
//	+---------+--------+----------------+
//	| version | type   | reserved (0)   |   version = 1 (CommandVersion)
//	|   u8    |   u8   |      u16       |   type    = CommandType
//	+---------+--------+----------------+
//
// Put messages (type 1):
//
//	+------------+--------------------+-------+---------+------------+
//	| term u64   | firstCommitOff i64 | n u32 | metaLen | payloadLen |
//	+------------+--------------------+-------+---------+------------+
//	| meta: n × { topic str, queueId i32, queueOffset i64,           |
//	|             commitOffset i64, size i32, tagsCode i64,          |
//	|             storeTimestamp i64, nKeys u16, nKeys × key str }   |
//	|       then delay progress: u32 d × {queueId i32, offset i64}   |
//	+-----------------------------------------------------------------+
//	| payload: the n stored message records, contiguous, in order    |
//	+-----------------------------------------------------------------+
//
// SpanFunc reads only the fixed part: payload starts at 32 + metaLen, and
// message i's commit offset is firstCommitOffset + the sizes before it.
//
// Metadata commands (types 2–8) follow the header with their fields in
// declaration order (see metacmd.go): CommitOffsets (2) and ResetOffsets
// (8) are u32 n × {group str, topic str, queueId i32, offset i64};
// PutTopic (3) {name, readQ i32, writeQ i32, perm i32, sysFlag i32,
// order u8, filterType u8}; DeleteTopic (4) and DeleteSubscriptionGroup
// (6) {name}; PutSubscriptionGroup (5) {name, consumeEnable u8,
// fromMin u8, broadcast u8, retryQueues i32, retryMax i32, brokerId i64,
// whichBrokerWhenSlow i64, notifyIdsChanged u8}; DelayProgress (7) u32 n ×
// {queueId i32, offset i64}. Type 9 (transaction state) is reserved.
// An unknown version or type stops the node: skipping it would diverge.
//
// # Snapshot encoding (frozen, version 1)
//
//	magic u32 "RMQS" | version u8 | appliedIndex u64 | commitNext i64 |
//	topics (u32 n × topic) | groups (u32 n × group) |
//	consumer offsets (as CommitOffsets) | queues (u32 n × {topic str,
//	queueId i32, nextOffset i64}) | delay (u32 n × {queueId, offset}) |
//	crc32c u32 of all preceding bytes
//
// Snapshots hold metadata only; messages stay in the commitlog, whose
// retention (not raft compaction) deletes them.
//
// # Timeouts
//
// DefaultConfig's 500 ms heartbeat/election and 250 ms leader lease
// replace a dead leader in roughly 0.5–1.2 s on a LAN; see Config.
package dledger
