package filter

import (
	"errors"
	"fmt"
)

var (
	// ErrSyntax is what every *SyntaxError for a malformed expression
	// matches with errors.Is: a lexical or grammatical mistake, or an
	// operand RocketMQ refuses at compile time (a string compared with >,
	// NULL compared with =, BETWEEN bounds out of order, ...).
	ErrSyntax = errors.New("filter: syntax error")

	// ErrLimit is what a *SyntaxError matches when the expression is well
	// formed as far as it was read but exceeds one of the limits (MaxLen,
	// MaxDepth, MaxInItems, MaxNodes).
	ErrLimit = errors.New("filter: expression exceeds a limit")
)

// SyntaxError is the error Compile returns for an expression it refuses.
type SyntaxError struct {
	// Pos is the 1-based byte position in the expression at which the
	// problem starts: 1 is the first byte, len(expr)+1 means "at the end".
	// It counts bytes, not characters, so a multi-byte UTF-8 character
	// before the problem counts as several.
	Pos int
	// Msg says what is wrong, without the position.
	Msg string
	// Err is ErrSyntax or ErrLimit; Unwrap returns it.
	Err error
}

// Error returns "filter: position N: Msg".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("filter: position %d: %s", e.Pos, e.Msg)
}

// Unwrap returns ErrSyntax or ErrLimit, so errors.Is tells the two apart.
func (e *SyntaxError) Unwrap() error {
	if e.Err == nil {
		return ErrSyntax
	}
	return e.Err
}
