// Package protocol is the RocketMQ vocabulary above the remoting frame,
// shared by the servers (broker, namesrv) and the SDK (client): what the
// codes mean (which answers are worth retrying), permission bits, system
// topics and name rules, every JSON body that crosses the wire, and the
// request headers with one parser that every handler decodes them with.
//
// It sits beside remoting and message at the bottom of the dependency
// graph: it imports remoting (codes) and message (tag hashes) only, and
// every package above may import it. The SDK imports protocol and never a
// server package.
//
// # JSON bodies
//
// Field names and shapes are Apache RocketMQ 4.x's (fastjson on the Java
// side): a Java admin tool or client parses what these types marshal, and
// they accept what the Java and Go clients send. Where the two official
// clients differ (a heartbeat's codeSet holds numbers from Java, strings
// from Go) the decoder accepts both and the encoder writes the Go client's
// form.
//
// # Headers
//
// Request headers travel as a string map (extFields). Header reads a map
// field by field and keeps the first problem, worded as RocketMQ's
// RemotingCommand.decodeCommandCustomHeader ("the custom field <topic> is
// null"), so a malformed request gets the answer a Java broker would give.
// The typed headers (SendMessageHeader, PullMessageHeader, ...) decode
// with it and encode back to extFields for the SDK.
package protocol
