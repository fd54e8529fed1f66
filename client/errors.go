package client

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// Sentinel errors, tested with errors.Is. Returned errors wrap them with
// detail.
var (
	// ErrNoRoute: no name server knows the topic (and, for a producer, the
	// auto-create topic TBW102 has no route either), or its route has no
	// queue with the needed permission.
	ErrNoRoute = errors.New("client: no route for topic")
	// ErrNoNameServer: no name server answered.
	ErrNoNameServer = errors.New("client: no name server reachable")
	// ErrBrokerNotFound: a broker group named in a route has no address.
	ErrBrokerNotFound = errors.New("client: broker group has no address")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("client: closed")
	// ErrNotStarted: Start has not been called (or failed).
	ErrNotStarted = errors.New("client: not started")
	// ErrInvalidOption: an option's value is out of range.
	ErrInvalidOption = errors.New("client: invalid option")
	// ErrInvalidMessage: a message has no topic, an empty body or bad
	// properties; a batch is empty or mixes topics.
	ErrInvalidMessage = errors.New("client: invalid message")
	// ErrMessageTooLarge: a body is over the maximum message size.
	ErrMessageTooLarge = errors.New("client: message too large")
	// ErrMessageNotFound: an admin lookup found no message.
	ErrMessageNotFound = errors.New("client: message not found")
)

// Error is a broker's or name server's failure answer (a response code
// other than SUCCESS), with the request and address it answered.
type Error struct {
	// Code is the RocketMQ response code (remoting.Res*).
	Code int16
	// Remark is the peer's explanation.
	Remark string
	// Request is the request code that failed (remoting.Req*).
	Request int16
	// Addr is the address that answered.
	Addr string
}

// Error names the request, the address and the answer.
func (e *Error) Error() string {
	s := fmt.Sprintf("client: %s at %s: %s (%d)", remoting.CodeName(e.Request), e.Addr,
		remoting.ResponseCodeName(e.Code), e.Code)
	if e.Remark != "" {
		s += ": " + e.Remark
	}
	return s
}

// Retriable reports whether the same request may succeed when sent again,
// possibly elsewhere: SYSTEM_ERROR, SYSTEM_BUSY, SERVICE_NOT_AVAILABLE,
// NO_PERMISSION and TOPIC_NOT_EXIST, as the official producers.
func (e *Error) Retriable() bool { return protocol.Retriable(e.Code) }

// Unwrap returns the equivalent *remoting.ResponseError.
func (e *Error) Unwrap() error { return &remoting.ResponseError{Code: e.Code, Remark: e.Remark} }

// failover reports whether the answer says the group is changing leader
// (or the write's fate is unknown while it does): worth retrying at once
// at a refreshed route, beyond the retry budget.
func (e *Error) failover() bool { return protocol.Failover(e.Code) }

// responseError returns nil for SUCCESS and an *Error otherwise.
func responseError(addr string, req, resp *remoting.Command) error {
	if resp.Code == remoting.ResSuccess {
		return nil
	}
	return &Error{Code: resp.Code, Remark: resp.Remark, Request: req.Code, Addr: addr}
}

// IsRetriable reports whether err is worth retrying: a retriable *Error, a
// connection failure or a timeout of one request.
func IsRetriable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retriable()
	}
	return isTransport(err)
}

// isTransport reports whether err is a failure to reach a peer or to hear
// back in time (rather than an answer).
func isTransport(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	switch {
	case errors.Is(err, remoting.ErrConnClosed), errors.Is(err, remoting.ErrTimeout),
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne):
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// isFailover reports whether err calls for refreshing the route at once and
// trying the group's (new) leader or another node.
func isFailover(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.failover()
	}
	return isTransport(err)
}
