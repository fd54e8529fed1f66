package cli

import (
	"errors"
	"os"
	"runtime"
	rpprof "runtime/pprof"

	ucli "github.com/urfave/cli/v2"
)

// withProfiling adds profiling flags to a server command, for benchmarks:
// --cpuprofile writes a CPU profile of the whole run, and
// --block-profile-rate / --mutex-profile-fraction turn on the block and
// mutex profiles that the broker's --http listener serves at /debug/pprof/.
func withProfiling(cmd *ucli.Command) *ucli.Command {
	cmd.Flags = append(cmd.Flags,
		&ucli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the whole run to this file"},
		&ucli.IntFlag{Name: "block-profile-rate", Usage: "runtime.SetBlockProfileRate (ns; 0 off)"},
		&ucli.IntFlag{Name: "mutex-profile-fraction", Usage: "runtime.SetMutexProfileFraction (0 off)"},
	)
	before, after := cmd.Before, cmd.After
	var cpu *os.File
	cmd.Before = func(c *ucli.Context) error {
		runtime.SetBlockProfileRate(c.Int("block-profile-rate"))
		runtime.SetMutexProfileFraction(c.Int("mutex-profile-fraction"))
		if path := c.String("cpuprofile"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			if err := rpprof.StartCPUProfile(f); err != nil {
				f.Close()
				return err
			}
			cpu = f
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
	cmd.After = func(c *ucli.Context) error {
		var errs []error
		if after != nil {
			errs = append(errs, after(c))
		}
		if cpu != nil {
			rpprof.StopCPUProfile()
			errs = append(errs, cpu.Close())
		}
		return errors.Join(errs...)
	}
	return cmd
}
