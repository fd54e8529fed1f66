package protocol

import "github.com/raftmq/raftmq/remoting"

// What the response codes mean to a caller. The numbers and names are in
// remoting (they are part of the frame layer's vocabulary); whether an
// answer is worth retrying is a matter of the protocol above it.

// Retriable reports whether sending the same request again (possibly to
// another broker) may succeed after an answer with code. It follows the
// official producers' retry set: system error, system busy, service not
// available, no permission (e.g. a broker that lost write perm) and topic
// not exist (a stale route).
func Retriable(code int16) bool {
	switch code {
	case remoting.ResSystemError, remoting.ResSystemBusy, remoting.ResServiceNotAvailable,
		remoting.ResNoPermission, remoting.ResTopicNotExist:
		return true
	default:
		return false
	}
}

// Failover reports whether an answer with code says the broker group is
// changing leader, or that a write's fate is unknown while it does:
// worth retrying at once at a refreshed route, beyond a retry budget.
func Failover(code int16) bool {
	return code == remoting.ResServiceNotAvailable || code == remoting.ResSystemError
}
