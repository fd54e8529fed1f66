package remoting

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test them with errors.Is; the returned errors wrap
// them with detail.
var (
	// ErrFrameTooLarge: a frame's length exceeds the configured maximum, or a
	// command is too big to be framed at all.
	ErrFrameTooLarge = errors.New("remoting: frame too large")
	// ErrHeaderTooLarge: a frame's header length exceeds the server's
	// Limits.MaxHeaderSize.
	ErrHeaderTooLarge = errors.New("remoting: header too large")
	// ErrMalformedFrame: a frame's length fields are inconsistent (negative,
	// too small to hold the header-length word, header longer than frame).
	ErrMalformedFrame = errors.New("remoting: malformed frame")
	// ErrBadHeader: the header could not be decoded or encoded (unknown
	// serialisation, invalid JSON, truncated binary field).
	ErrBadHeader = errors.New("remoting: bad header")
	// ErrConnClosed: the connection closed before the call completed.
	ErrConnClosed = errors.New("remoting: connection closed")
	// ErrTimeout: no response arrived before the call's deadline.
	ErrTimeout = errors.New("remoting: request timed out")
	// ErrServerClosed: Serve was called on, or returned from, a server that
	// was shut down.
	ErrServerClosed = errors.New("remoting: server closed")
	// ErrClientClosed: the client was closed.
	ErrClientClosed = errors.New("remoting: client closed")
)

// ResponseError is a response whose code is not SUCCESS, as an error.
type ResponseError struct {
	Code   int16
	Remark string
}

// Error names the response code and carries the peer's remark.
func (e *ResponseError) Error() string {
	if e.Remark == "" {
		return fmt.Sprintf("remoting: response %s (%d)", ResponseCodeName(e.Code), e.Code)
	}
	return fmt.Sprintf("remoting: response %s (%d): %s", ResponseCodeName(e.Code), e.Code, e.Remark)
}

// AsError returns nil for a SUCCESS response and a *ResponseError otherwise.
// Codes that some requests treat as success (the flush and slave codes of a
// send, PULL_NOT_FOUND) are errors here; callers that accept them check the
// code first.
func AsError(resp *Command) error {
	if resp.Code == ResSuccess {
		return nil
	}
	return &ResponseError{Code: resp.Code, Remark: resp.Remark}
}
