// Package namesrv is raftmq's name server: a stateless registry of broker
// groups and the topics they serve, answering the route queries of
// RocketMQ clients. Brokers register with every name server (REGISTER_BROKER
// at start, on every leadership change and every 30 s); a broker silent for
// BrokerTimeout (120 s) is evicted by a scan every ScanInterval (10 s).
//
// # Routes and Raft leadership
//
// A broker group ("brokerName") is one Raft group of three nodes. Its
// current leader is brokerId 0 in routes, followers 1..n. Clients send only
// to id 0, so the table keeps these invariants:
//
//   - A registration as id 0 carries the node's Raft term (ext "raftTerm",
//     a raftmq extension; RocketMQ brokers without it count as term 0). An
//     id-0 registration with a lower term than the known leader's is a stale
//     ex-leader and is recorded as a follower instead, so a late packet never
//     turns a route back to a deposed node.
//   - An address appears under one id only: a node that changes role
//     (leader ↔ follower) moves, it is never listed twice.
//   - A route never loses id 0 while the group has any member: when the
//     leader's connection closes, its entry stays (clients must always see
//     an id 0) until a new leader registers or it times out, whereas a
//     follower whose connection closes leaves the route at once.
//
// # Wire shapes
//
// The route body is the compact JSON the Go client parses by hand (see
// docs/PROTOCOL.md): brokerAddrs always present, no spaces.
//
//	{"orderTopicConf":"","queueDatas":[{"brokerName":"broker-a","readQueueNums":4,
//	 "writeQueueNums":4,"perm":6,"topicSysFlag":0}],"brokerDatas":[{"cluster":"c1",
//	 "brokerName":"broker-a","brokerAddrs":{"0":"127.0.0.1:10911"}}]}
//
// The REGISTER_BROKER body is RocketMQ's RegisterBrokerBody JSON
// (topicConfigSerializeWrapper.topicConfigTable and dataVersion); the
// compressed binary variant is refused with a remark.
package namesrv
