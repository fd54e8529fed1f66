// Package chaos is raftmq's containerized chaos suite (TestContainerChaos)
// and the record its runs leave behind.
//
// Each run starts a name server and one 3-node broker group as
// containers of a FROM-scratch image on a private Docker bridge network,
// drives ordered load through raftmq's SDK and the official RocketMQ Go
// client, and injects faults from outside the processes on a seeded
// schedule: SIGKILL, pause, full and one-way partitions, a flapping link,
// a full disk (a small loop-mounted ext4), and adding and removing a
// fourth voter while another node is paused. After healing everything a
// checker reads every queue from the start and counts what was
// acknowledged but not stored (lost), stored more than once (duplicates)
// and stored out of its key's order, and the longest gaps between our
// SDK's acknowledgements per fault step. A run is one JSON line (Result);
// cmd/chaostable turns a file of them into docs/RELIABILITY.md's table.
package chaos
