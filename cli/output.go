package cli

import (
	"encoding/json"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
)

// outputFlag is the --output (-o) flag of every admin command that prints
// data: "table" (default, for people) or "json" (one JSON document per
// command, lowerCamel keys, arrays for lists; a stable shape for scripts).
func outputFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table", Usage: "output format: table or json"}
}

// jsonOutput reports whether the command was asked for JSON, and rejects an
// unknown format by name.
func jsonOutput(c *ucli.Context) (bool, error) {
	switch f := c.String("output"); f {
	case "", "table":
		return false, nil
	case "json":
		return true, nil
	default:
		return false, fmt.Errorf("unknown --output %q (want table or json)", f)
	}
}

// emit prints v as one indented JSON document when --output json was given,
// else calls table. Callers pass a slice (never nil: use an empty one) for
// lists so the JSON is always an array.
func emit(c *ucli.Context, v any, table func() error) error {
	js, err := jsonOutput(c)
	if err != nil {
		return err
	}
	if !js {
		return table()
	}
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// report ends a command that changed something: the sentence for people,
// or v (the change's result, a JSON object) with --output json.
func report(c *ucli.Context, v any, format string, args ...any) error {
	return emit(c, v, func() error {
		_, err := fmt.Fprintf(c.App.Writer, format+"\n", args...)
		return err
	})
}

// reportPlacements ends a command that changed broker groups: line(p) for
// each group that took the change, or v (its JSON document) with --output
// json — what landed before an error too — then err.
func reportPlacements(c *ucli.Context, v any, placed []client.Placement, err error, line func(client.Placement) string) error {
	eerr := emit(c, v, func() error {
		for _, p := range placed {
			if _, err := fmt.Fprintln(c.App.Writer, line(p)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return eerr
}

// placedIn is the usual line of reportPlacements: "<what> in group <name>
// (via <addr>)".
func placedIn(what string) func(client.Placement) string {
	return func(p client.Placement) string {
		return fmt.Sprintf("%s in group %s (via %s)", what, p.BrokerName, p.Addr)
	}
}

// orEmpty is ps, or an empty list for JSON when nothing was placed.
func orEmpty(ps []client.Placement) []client.Placement {
	if ps == nil {
		return []client.Placement{}
	}
	return ps
}
