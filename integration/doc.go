// Package integration holds raftmq's compatibility and multi-process tests.
// It is a module of its own so that the official Apache RocketMQ Go client,
// which the compatibility tests drive, never becomes a dependency of the
// broker itself.
package integration
