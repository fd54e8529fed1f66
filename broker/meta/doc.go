// Package meta is a broker group's replicated metadata: topics,
// subscription groups, consumer offsets, delay-level progress and timer
// progress. It is the dledger.StateMachine of a broker node: every change
// is a command proposed through the group and applied here, in log order,
// on every replica, so every node of a group agrees at the same applied
// index and a new leader resumes from exactly what was committed.
//
// The message log itself (queue and commit offsets) is dledger's; what the
// messages are is the store's; what the metadata means is the broker's.
// This package only keeps it and encodes it.
//
// # Command encoding (frozen)
//
// A command's body follows dledger's entry header (version, type, 0); all
// integers big-endian, strings u16 length + bytes (internal/wire). Types:
//
//	2  CommitOffsets     u32 n × {group str, topic str, queueId i32, offset i64}
//	3  PutTopic          {name, readQ i32, writeQ i32, perm i32, sysFlag i32,
//	                      order u8, filterType u8}
//	4  DeleteTopic       {name}
//	5  PutSubscriptionGroup {name, consumeEnable u8, fromMin u8,
//	                      broadcast u8, retryQueues i32, retryMax i32,
//	                      brokerId i64, whichBrokerWhenSlow i64,
//	                      notifyIdsChanged u8}
//	6  DeleteSubscriptionGroup {name}
//	7  DelayProgress     u32 n × {queueId i32, offset i64}
//	8  ResetOffsets      as CommitOffsets
//	9  TxnEnd            {halfOffset i64, decision u8 (1 commit, 2 rollback,
//	                      3 discard)}
//	10 TimerProgress     {o i64, t i64, l i64} (read only: k = MaxInt64)
//	11 TxnChecks         u32 n × {halfOffset i64, times i32, atMs i64}
//	12 TimerProgressTies {o i64, t i64, l i64, k i64}
//	13–16 the ACL's (acl.go)
//	17 BrokerPermission  {perm i32}
//	18 BrokerSettings    u32 n × {key str, value str}, sorted by key
//
// An unknown type, or a body that does not decode exactly, is an error:
// dledger stops the node rather than diverge.
//
// # Snapshot encoding (frozen, version 4; versions 1–3 are read too)
//
//	version u8 = 4 | applied u64 | topics (u32 n × topic, by name) |
//	groups (u32 n × group, by name) | consumer offsets (as CommitOffsets,
//	sorted) | delay (u32 n × {queueId, offset}, by queue) |
//	timer {o, t, l} | transactions {low i64, u32 n × {halfOffset i64,
//	decision u8}, checks as TxnChecks} | timer k i64 (version 2 on;
//	version 1 restores k = MaxInt64) | ACL state and brokerPermission i32
//	(version 3 on) | settings as BrokerSettings (version 4 on)
//
// dledger wraps it in its own snapshot (with the log's counters and a
// checksum).
package meta
