// Package filter owns the SQL92 message filter: the selector language a
// RocketMQ consumer subscribes with (MessageSelector.bySql) and the
// broker evaluates against every message it would deliver. Compile turns
// the selector into an Expression once per subscription; Matches decides
// one message, without allocating. The package knows nothing of messages,
// queues or subscriptions: it sees a message as Properties, where user
// properties and system ones such as TAGS are plain keys.
//
// The language, its type rules and its error cases are those of Apache
// RocketMQ's filter module (filter/src/main/java/org/apache/rocketmq/
// filter/parser/SelectorParser.jj and the expression classes), so that a
// subscription means here what it means on a RocketMQ broker. Where
// RocketMQ's behaviour is surprising it is kept and said so below.
//
// # Grammar
//
// Lowest precedence first; keywords are case-insensitive, identifiers are
// case-sensitive:
//
//	selector   = or
//	or         = and { OR and }
//	and        = equality { AND equality }
//	equality   = comparison { "=" comparison | "<>" comparison
//	                        | IS NULL | IS NOT NULL }
//	comparison = unary { (">" | ">=" | "<" | "<=") unary
//	                   | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) string
//	                   | [NOT] BETWEEN unary AND unary
//	                   | [NOT] IN "(" string { "," string } ")" }
//	unary      = "+" unary | "-" unary | NOT unary | primary
//	primary    = string | integer | float | TRUE | FALSE | NULL
//	           | identifier | "(" or ")"
//
//	identifier = [A-Za-z_$] { [A-Za-z0-9_$] }   (not a keyword)
//	integer    = "0" | [1-9] { [0-9] } [ "l" | "L" ]
//	float      = digits "." [digits] [exp] | "." digits [exp] | digits exp
//	exp        = ( "e" | "E" ) [ "+" | "-" ] digits
//	string     = "'" { any byte but "'" | "''" } "'"
//
// Keywords: NOT AND OR BETWEEN IN TRUE FALSE NULL IS CONTAINS STARTSWITH
// ENDSWITH. White space is space, tab, CR, LF and form feed; "/* */"
// comments and "--" comments ending at a line end are skipped (a "--"
// with no line end after it is two minus signs). There are no other
// operators or functions: no LIKE, no arithmetic, no "!=", no "==".
//
// Because NOT binds tighter than any comparison, `NOT a = 'x'` is
// `(NOT a) = 'x'`, which never matches; write `NOT (a = 'x')` or
// `a <> 'x'`.
//
// # Literals
//
// An integer literal is a Java long (out of range is a syntax error)
// that becomes an int when it fits in 32 bits; the type matters, see
// below. A float literal is a double; like RocketMQ, Compile refuses one
// that overflows and one below the smallest positive double, which
// includes 0.0 (write 0). A leading zero ends an integer: 007 is a
// syntax error. Unary minus applies at evaluation: -5 is the int -5,
// -'x' and -a (a property) are NULL.
//
// # Evaluation
//
// Property values are strings; a missing property is NULL. Results are
// TRUE, FALSE, NULL, or a failure, and a message matches only on TRUE.
//
//   - a = 'x', a <> 'x', a = b compare strings exactly.
//   - A property compared with a number is parsed as that number's type,
//     with Java's rules: against an int literal (a > 5, a = 5) with
//     Integer.valueOf, so "5.5", " 5" or "3000000000" fail (and "٤٢" is
//     42: Java takes any decimal digit of the BMP); against a long
//     literal with Long.valueOf; against a float literal (a > 5.0)
//     with Double.valueOf, which trims, and accepts exponents, NaN,
//     Infinity, hex floats and a trailing d/f. Two properties ordered
//     with <, <=, >, >= are both parsed as doubles. Numbers of different
//     types widen (int, long, double); NaN is above +Inf, as in
//     Double.compareTo.
//   - A property compared with TRUE or FALSE is true when it equals
//     "true" ignoring case, false otherwise.
//   - A failed conversion does not make one comparison FALSE: it ends the
//     evaluation and the message does not match, as the exception ends it
//     in a RocketMQ broker. Operands are evaluated in RocketMQ's order and
//     AND/OR stop at the first deciding operand, so `b = 'x' OR a > 5`
//     matches b = 'x' whatever a holds, while `a > 5 OR b = 'x'` does not
//     match a = 'abc'. Also a failure: TRUE or FALSE (or a condition) on
//     the left of = with a string on the right.
//   - <, <=, >, >= with a NULL side are NULL. = is asymmetric, as in
//     RocketMQ: NULL on the right only is FALSE (so `'x' <> a` matches a
//     message without a), NULL on the left only is NULL, and NULL on both
//     sides is TRUE (so `a = b` matches when both are missing).
//   - IS NULL and IS NOT NULL are never NULL.
//   - BETWEEN is >= AND <=; NOT BETWEEN is < OR >.
//   - IN and NOT IN are NULL for a missing property.
//   - CONTAINS, STARTSWITH, ENDSWITH and their NOT forms are FALSE when
//     the literal is empty or the operand is NULL or not a string, even
//     with NOT.
//   - AND and OR are three-valued (FALSE AND NULL is FALSE, TRUE OR NULL
//     is TRUE, NULL otherwise); NOT NULL is NULL.
//   - A bare property used as a condition (`a`, `a AND b`) is FALSE when
//     present and NULL when missing, so `NOT a` matches messages that
//     have a.
//
// # Compile-time refusals
//
// As in RocketMQ: a string, TRUE, FALSE or NULL literal or a condition
// as an operand of <, <=, >, >=; a NULL literal as an operand of = or <>;
// TRUE or FALSE = a non-boolean literal; BETWEEN with NULL or decreasing
// literal bounds; IN after anything but a property; a selector or an
// operand of AND, OR, NOT that is not a condition (`5`, `'x' AND a = 1`).
//
// # Deviations from RocketMQ
//
// RocketMQ's parser stops after the first complete expression and
// silently ignores the rest, so `a = 1 b = 2` filters on a alone and
// `upper(a) = 'X'` compiles as the bare property upper. Here both are
// syntax errors, the second naming the unknown function. Error positions
// are byte positions (RocketMQ reports a line and a column).
//
// # Limits
//
// MaxLen, MaxDepth, MaxInItems and MaxNodes bound what Compile accepts;
// beyond them it returns a *SyntaxError matching ErrLimit, so neither
// parsing nor evaluation can be driven into unbounded memory or stack.
package filter
