// Package bench is raftmq's cluster benchmark: workloads that drive a
// running cluster over the network through the SDK (package client), in
// the spirit of `nats bench`.
//
//   - Produce: clients producers send fixed-size messages in sync, async
//     (SendAsync with a bounded number in flight per client) or batch mode;
//     the latency is each message's ack latency.
//   - Consume: read a backlog from every queue of a topic as fast as
//     possible with pull consumers.
//   - E2E: producers and a consumer at once; the latency is from the send
//     call to the consumer seeing the message (a timestamp in the body).
//
// Every workload returns a Result: counts, elapsed time and a latency
// Histogram (log-linear buckets, relative error under 1/256), which
// Summary prints and WriteCSV appends to a file. Progress prints a live
// rate line to stderr while a workload runs.
//
// The package imports client, message and remoting only: it benchmarks a
// cluster as applications see it, never the broker in-process.
package bench
