package filter

// Limits of what Compile accepts. An expression beyond any of them is
// refused with a *SyntaxError matching ErrLimit, before it can use memory
// or stack in proportion to a hostile input.
const (
	// MaxLen is the longest expression in bytes.
	MaxLen = 64 << 10
	// MaxDepth bounds nesting: parentheses, prefix operators (NOT, +, -)
	// and operators chained onto the result of another comparison
	// (a = b = c, a IS NULL IS NULL) each count one level. It bounds the
	// recursion of both the parser and Matches.
	MaxDepth = 64
	// MaxInItems is the most string literals one IN or NOT IN list holds.
	MaxInItems = 1024
	// MaxNodes is the most operators, operands and literals one
	// expression compiles to (the items of IN lists are not counted; they
	// are bounded by MaxInItems and MaxLen).
	MaxNodes = 4096
)

// Properties is the read side of a message's properties as a filter sees
// them: user properties and system ones such as TAGS share one namespace.
// Get reports the value of name and whether the message has it; a missing
// property is SQL NULL, an empty value is the empty string. Matches calls
// Get from the calling goroutine only and keeps nothing it returns.
type Properties interface {
	Get(name string) (value string, ok bool)
}

// Map adapts a map of property names to values to Properties. A nil Map is
// a message without properties.
type Map map[string]string

var _ Properties = Map(nil)

// Get returns m[name].
func (m Map) Get(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

// Expression is a compiled SQL92 selector. It is immutable, so one
// Expression may be matched from many goroutines at once.
type Expression struct {
	src  string
	root node
}

// Compile parses and checks an SQL92 selector the way a RocketMQ broker
// does when a consumer subscribes with one. An expression it refuses
// returns a *SyntaxError that matches ErrSyntax, or ErrLimit when it is
// too large. Compile is meant to run once per subscription; Matches is the
// cheap, repeated part.
func Compile(expr string) (*Expression, error) {
	if len(expr) > MaxLen {
		return nil, &SyntaxError{Pos: MaxLen + 1, Msg: "expression longer than 65536 bytes", Err: ErrLimit}
	}
	root, err := parse(expr)
	if err != nil {
		return nil, err
	}
	return &Expression{src: expr, root: root}, nil
}

// Matches evaluates the expression against one message's properties and
// reports whether it is TRUE. NULL (an unknown outcome, for instance a
// comparison with a missing property) and FALSE do not match, and neither
// does an expression whose evaluation fails the way RocketMQ's throws (a
// property that does not convert to the number it is compared with): the
// failure ends the evaluation, as the exception does in a RocketMQ broker.
// A nil props is a message without properties. Matches does not allocate.
func (e *Expression) Matches(props Properties) bool {
	if props == nil {
		props = Map(nil)
	}
	return e.root.eval(props).truth()
}

// String returns the expression's source text as given to Compile.
func (e *Expression) String() string { return e.src }
