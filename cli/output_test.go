package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"slices"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

func outputContext(t *testing.T, format string) (*ucli.Context, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	app := &ucli.App{Writer: &out}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("output", "table", "")
	if err := fs.Set("output", format); err != nil {
		t.Fatal(err)
	}
	return ucli.NewContext(app, fs, nil), &out
}

func TestEmitJSONAndTable(t *testing.T) {
	type row struct {
		BrokerName string `json:"brokerName"`
		Queues     int    `json:"queues"`
	}
	rows := []row{{"b1", 8}}
	c, out := outputContext(t, "json")
	tableCalled := false
	if err := emit(c, rows, func() error { tableCalled = true; return nil }); err != nil {
		t.Fatal(err)
	}
	var got []row
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v: %q", err, out.String())
	}
	if tableCalled || len(got) != 1 || got[0] != rows[0] {
		t.Fatalf("got %+v tableCalled=%v", got, tableCalled)
	}
	c, _ = outputContext(t, "table")
	if err := emit(c, rows, func() error { tableCalled = true; return nil }); err != nil || !tableCalled {
		t.Fatalf("table: err=%v called=%v", err, tableCalled)
	}
	c, _ = outputContext(t, "yaml")
	if err := emit(c, rows, func() error { return nil }); err == nil {
		t.Fatal("unknown format accepted")
	}
}

// TestEveryAdminCommandTakesOutput: every admin command (the topic,
// cluster, raft, group, producer, message and acl trees, send and consume,
// which print JSON Lines) takes --output,
// so scripts can ask any of them for JSON.
func TestEveryAdminCommandTakesOutput(t *testing.T) {
	admin := map[string]bool{"topic": true, "cluster": true, "raft": true, "group": true, "producer": true, "message": true, "acl": true,
		"send": true, "consume": true}
	var walk func(path string, cmds []*ucli.Command)
	leaves := 0
	walk = func(path string, cmds []*ucli.Command) {
		for _, c := range cmds {
			if c.Name == "help" {
				continue
			}
			p := path + " " + c.Name
			if len(c.Subcommands) > 0 {
				walk(p, c.Subcommands)
				continue
			}
			leaves++
			has := false
			for _, f := range c.Flags {
				if slices.Contains(f.Names(), "output") {
					has = true
				}
			}
			if !has {
				t.Errorf("%s has no --output", p)
			}
		}
	}
	for _, c := range App(io.Discard, io.Discard).Commands {
		if admin[c.Name] {
			walk("raftmq", []*ucli.Command{c})
		}
	}
	if leaves < 40 {
		t.Fatalf("only %d admin commands found", leaves)
	}
}
