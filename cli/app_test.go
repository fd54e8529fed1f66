package cli

import (
	"bytes"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := App(&out, &errOut).Run(append([]string{"raftmq"}, args...))
	return out.String(), errOut.String(), err
}

func TestVersionCommand(t *testing.T) {
	out, _, err := run(t, "version")
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	if !strings.HasPrefix(out, "raftmq "+Version+" (commit ") || !strings.Contains(out, "go1.") {
		t.Fatalf("version output = %q", out)
	}
}

func TestHelpListsCommands(t *testing.T) {
	out, _, err := run(t, "help")
	if err != nil {
		t.Fatalf("help: %v", err)
	}
	for _, want := range []string{"raftmq", "version"} {
		if !strings.Contains(out, want) {
			t.Errorf("help output lacks %q:\n%s", want, out)
		}
	}
}

func TestUnknownCommandFails(t *testing.T) {
	_, _, err := run(t, "no-such-command")
	if err == nil || !strings.Contains(err.Error(), `unknown command "no-such-command"`) {
		t.Fatalf("unknown command error = %v", err)
	}
}
