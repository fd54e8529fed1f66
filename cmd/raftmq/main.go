// Command raftmq is the single raftmq binary: name server, broker, dev
// cluster and admin commands. See `raftmq help`.
package main

import (
	"os"

	"github.com/raftmq/raftmq/cli"
)

func main() { os.Exit(cli.Main(os.Args)) }
