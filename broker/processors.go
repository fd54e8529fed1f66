package broker

import (
	"context"
	"fmt"

	"github.com/raftmq/raftmq/remoting"
)

// handlerFunc is the shape of every request processor.
type handlerFunc = func(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command

// registerProcessors installs one processor per request code. Each group
// of codes lives in its own file with a behaviour comment at its top.
func (b *Broker) registerProcessors() {
	b.registerSend()      // send.go
	b.registerAdmin()     // admin.go
	b.registerPull()      // pull.go
	b.registerOffsets()   // offsets.go
	b.registerClients()   // clients.go
	b.registerRaftAdmin() // admin_raft.go
	b.registerDelay()     // delay.go
	b.registerRetry()     // retry.go
	b.registerTimers()    // timer.go
	b.registerLocks()     // lock.go
}

func (b *Broker) handle(code int16, h handlerFunc) { b.rs.HandleFunc(code, h) }

// startBackground starts the node's periodic work once it serves.
func (b *Broker) startBackground() {
	b.startRegistration()   // register.go
	b.startClients()        // clients.go
	b.startOffsets()        // offsets.go
	b.startReadRetention()  // read_retention.go
	b.startLeaderServices() // delay_leader.go
	b.startHTTP()           // http.go
	// The consumequeue and the index are not flushed on a timer: the raft
	// log is the durable copy, the FSM syncs them before every snapshot
	// (the point raft replays from) and replay fills in what a crash lost.
	// A periodic flush would cost an fsync per dirty queue file (thousands
	// with thousands of queues) and write back a page per index slot
	// touched, for no durability gain.
}

// errResponse answers req with code and a formatted remark.
func errResponse(req *remoting.Command, code int16, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(req, code, fmt.Sprintf(format, args...))
}

// okResponse is an empty SUCCESS answer to req.
func okResponse(req *remoting.Command) *remoting.Command {
	return remoting.NewResponse(req, remoting.ResSuccess, "")
}
