package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/raftmq/raftmq/bench"
	ucli "github.com/urfave/cli/v2"
)

// stepProgress draws a bar for admin work of a known number of steps
// (queues reset, groups asked, ...) on stderr. It draws only when stderr
// is a terminal, or always with --progress, so scripts reading stdout (and
// --output json) never see it; a final Done clears the line on a terminal
// and prints the last state elsewhere.
type stepProgress struct {
	w     io.Writer
	label string
	total int
	done  int
	tty   bool
}

// progressFlag forces the progress bar when stderr is not a terminal.
func progressFlag() *ucli.BoolFlag {
	return &ucli.BoolFlag{Name: "progress", Usage: "draw the progress bar on stderr even when it is not a terminal"}
}

// newStepProgress returns the bar for total steps under label; it draws
// nothing unless stderr is a terminal or the command has --progress set.
func newStepProgress(c *ucli.Context, label string, total int) *stepProgress {
	p := &stepProgress{label: label, total: total}
	tty := bench.IsTerminal(c.App.ErrWriter)
	if tty || c.Bool("progress") {
		p.w, p.tty = c.App.ErrWriter, tty
	}
	return p
}

// Step records n more steps done, with what the last one was.
func (p *stepProgress) Step(n int, what string) {
	p.done += n
	if p.w == nil {
		return
	}
	line := p.line(what)
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K"+line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}

// Done ends the bar.
func (p *stepProgress) Done() {
	if p.w != nil && p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// line is "label [#####.....] 5/10 what".
func (p *stepProgress) line(what string) string {
	const cells = 20
	n := cells
	if p.total > 0 {
		n = min(cells, p.done*cells/p.total)
	}
	s := fmt.Sprintf("%s [%s%s] %d/%d", p.label, strings.Repeat("#", n), strings.Repeat(".", cells-n), p.done, p.total)
	if what != "" {
		s += " " + what
	}
	return s
}
