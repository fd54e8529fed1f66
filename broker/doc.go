// Package broker is one node of a raftmq broker group: the RocketMQ
// request processors clients talk to, on top of a dledger node that
// replicates the commitlog and fills this node's consumequeues and index.
//
// Writes (sends, offset commits, send-backs, topic changes) are proposed
// through the group on the leader; a follower forwards them to the leader
// and returns its answer, so a client with a stale route still succeeds.
// Any node serves pulls of the data it has applied, and a pull's answer
// sends a consumer far behind to a follower (follower_read.go).
//
// One file per group of request codes; each opens with a comment saying
// how it behaves.
package broker
