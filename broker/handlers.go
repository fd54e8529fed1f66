package broker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/raftmq/raftmq/remoting"
)

// handlerFunc is the shape of every request processor.
type handlerFunc = func(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command

// mux is where a service installs its processors, one per request code
// (the remoting server).
type mux interface {
	HandleFunc(code int16, f func(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command)
}

// errResponse answers req with code and a formatted remark.
func errResponse(req *remoting.Command, code int16, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(req, code, fmt.Sprintf(format, args...))
}

// okResponse is an empty SUCCESS answer to req.
func okResponse(req *remoting.Command) *remoting.Command {
	return remoting.NewResponse(req, remoting.ResSuccess, "")
}

// jsonResponse is a SUCCESS answer with v as its JSON body.
func jsonResponse(req *remoting.Command, v any) *remoting.Command {
	body, err := json.Marshal(v)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "encoding answer: %v", err)
	}
	resp := okResponse(req)
	resp.Body = body
	return resp
}
