// Package cli is the raftmq command line: server commands (namesrv, broker,
// dev) and admin commands, on urfave/cli/v2. cmd/raftmq only calls Main.
package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	ucli "github.com/urfave/cli/v2"
)

// Version is the release version, set at link time with
// -ldflags "-X github.com/raftmq/raftmq/cli.Version=v1.2.3".
var Version = "dev"

// App builds the raftmq command-line application writing to out and errOut.
func App(out, errOut io.Writer) *ucli.App {
	app := &ucli.App{
		Name:      "raftmq",
		Usage:     "a RocketMQ-compatible message broker whose commitlog is replicated by Raft",
		Version:   Version,
		Writer:    out,
		ErrWriter: errOut,
		// A mistyped command must fail a script, not print help and exit 0.
		Action: func(c *ucli.Context) error {
			if c.Args().Present() {
				return fmt.Errorf("unknown command %q (see 'raftmq help')", c.Args().First())
			}
			return ucli.ShowAppHelp(c)
		},
		Commands: append([]*ucli.Command{
			versionCommand(),
			namesrvCommand(),
			withProfiling(brokerCommand()),
			devCommand(), healthcheckCommand(),
		}, withClientTLS(
			topicCommand(),
			clusterCommand(), raftCommand(),
			groupCommand(), producerCommand(), messageCommand(), sendCommand(), consumeCommand(),
			benchCommand(), aclCommand(), dashboardCommand(),
		)...),
	}
	addCredentialFlags(app.Commands)
	return app
}

// Main runs the application with args (os.Args shape) and returns the
// process exit code.
func Main(args []string) int {
	app := App(os.Stdout, os.Stderr)
	if err := app.Run(args); err != nil {
		fmt.Fprintln(os.Stderr, "raftmq:", err)
		return 1
	}
	return 0
}

func versionCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "version",
		Usage: "print the version, commit and Go runtime",
		Action: func(c *ucli.Context) error {
			_, err := fmt.Fprintf(c.App.Writer, "raftmq %s (commit %s, %s %s/%s)\n",
				Version, revision(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

// revision is the VCS commit the binary was built from, when the Go
// toolchain recorded it.
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
			if len(rev) > 12 {
				rev = rev[:12]
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
