package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestStepProgressLine: the bar fills with the steps done, and a
// non-terminal writer only gets lines when asked (p.w set).
func TestStepProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := &stepProgress{w: &buf, label: "reset", total: 4}
	p.Step(1, "q0")
	p.Step(3, "q3")
	p.Done()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines %q", lines)
	}
	if want := "reset [#####...............] 1/4 q0"; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if want := "reset [####################] 4/4 q3"; lines[1] != want {
		t.Errorf("last line %q, want %q", lines[1], want)
	}
	quiet := &stepProgress{label: "x", total: 2}
	quiet.Step(2, "")
	if quiet.done != 2 {
		t.Errorf("quiet bar counted %d", quiet.done)
	}
}
