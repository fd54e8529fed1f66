package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	rpprof "runtime/pprof"

	ucli "github.com/urfave/cli/v2"
)

// withProfiling adds profiling flags to a server command, for benchmarks:
// --cpuprofile writes a CPU profile of the whole run, --pprof-listen serves
// net/http/pprof, and --block-profile-rate / --mutex-profile-fraction turn
// on the block and mutex profiles it serves.
func withProfiling(cmd *ucli.Command) *ucli.Command {
	cmd.Flags = append(cmd.Flags,
		&ucli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the whole run to this file"},
		&ucli.StringFlag{Name: "pprof-listen", Usage: "serve /debug/pprof/ on this address (e.g. 127.0.0.1:6060)"},
		&ucli.IntFlag{Name: "block-profile-rate", Usage: "runtime.SetBlockProfileRate (ns; 0 off)"},
		&ucli.IntFlag{Name: "mutex-profile-fraction", Usage: "runtime.SetMutexProfileFraction (0 off)"},
	)
	before, after := cmd.Before, cmd.After
	var cpu *os.File
	var srv *http.Server
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
		if addr := c.String("pprof-listen"); addr != "" {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("pprof: %w", err)
			}
			mux := http.NewServeMux()
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
			srv = &http.Server{Handler: mux}
			go func() { _ = srv.Serve(l) }()
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
		if srv != nil {
			errs = append(errs, srv.Close())
		}
		return errors.Join(errs...)
	}
	return cmd
}
