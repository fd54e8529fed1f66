// Package dashboard is raftmq's built-in web dashboard: server-rendered
// HTML pages over the SDK's client.Admin (and a client.Producer for test
// messages). It imports no server package, so it sees the cluster exactly
// as any admin client does.
//
// Pages (all GET, html/template, templates and CSS embedded):
//
//	/                      cluster: groups, nodes, raft role/term/commit/applied/lag, disk use
//	/topics                topics with their queue counts
//	/topics/{topic}        route, per queue min/max offset, a send-a-test-message form
//	/groups                consumer groups
//	/groups/{group}        per queue broker/consumer offset and lag, a reset-offsets form
//	/messages              query by key and time range, or view by offset message id
//
// Forms (POST, each answered with a result page; a POST whose Origin is
// another site is refused):
//
//	/cluster/transfer      hand a group's leadership on (client.Admin.TransferLeadership)
//	/topics/{topic}/send   send one message (client.Producer.Send)
//	/groups/{group}/reset  reset a group's offsets of a topic to earliest, latest or a time
//
// A failed cluster call renders an error box naming the address that
// answered and the RocketMQ response code; a page never shows a Go panic
// (a panicking handler is recovered and answered with an error box).
//
// The dashboard has no authentication: bind it to loopback, or put it
// behind a proxy that authenticates.
package dashboard
