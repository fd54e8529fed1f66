// Package remoting speaks Apache RocketMQ 4.x's remoting protocol: the frame
// codec, the JSON and ROCKETMQ (binary) header codecs, the request and
// response codes, and the connection handling both ends need — a Server
// that dispatches requests to handlers by code, a Client that keeps one
// connection per address, and a Conn shared by both that multiplexes
// concurrent requests and responses over one TCP stream.
//
// The package owns bytes on the wire and nothing above them: it does not
// know what a topic or a message is. It depends on nothing else in raftmq.
//
// # Frame
//
// All integers are big-endian. Frozen: this is RocketMQ's format.
//
//	 0               4               8
//	+---------------+-+-------------+----------------+--------------+
//	| frame length  |t| header len  | header         | body         |
//	| int32         |8| uint24      | headerLen bytes| the rest     |
//	+---------------+-+-------------+----------------+--------------+
//	frame length = 4 + headerLen + bodyLen   (excludes itself)
//	t            = serialize type: 0 JSON, 1 ROCKETMQ
//
// A reader checks the frame length before allocating: below 4 is
// ErrMalformedFrame, above the configured maximum (DefaultMaxFrameSize,
// 16 MiB) is ErrFrameTooLarge, a header length beyond the frame is
// ErrMalformedFrame, and a header that does not parse is ErrBadHeader. A
// server also refuses a header length above Limits.MaxHeaderSize
// (ErrHeaderTooLarge, default 1 MiB) before reading the header. A
// connection that sends any of these is closed: after a framing error the
// stream cannot be resynchronised.
//
// # TLS
//
// With ServerConfig.TLS or ClientConfig.TLS the same frames travel inside
// TLS (tls.go). A plaintext server recognises a TLS ClientHello by its
// first two bytes (0x16 handshake record, 0x03 version major; as a frame
// length that is over 369 MB) and closes the connection with a log line
// naming the mismatch instead of reporting an oversized frame.
//
// # JSON header (serialize type 0)
//
// What the official Go client sends, and what we write: exactly the bytes
// encoding/json produces for a struct with the fields in this order (keys of
// extFields sorted, HTML-safe escaping). Every extFields value is a JSON
// string — a Go client drops a frame with a bare number and times out.
//
//	{"code":10,"language":"GO","version":317,"opaque":42,"flag":0,
//	 "remark":"","extFields":{"queueId":"0","topic":"TopicTest"}}
//
// Decoding is liberal: any field order, unknown fields ignored (Java adds
// serializeTypeCurrentRPC), null remark, and numbers, booleans or null in
// extFields taken as their JSON text ("12", "true", "").
//
// # ROCKETMQ binary header (serialize type 1)
//
// Frozen. Lengths are signed; a negative one is ErrBadHeader.
//
//	+------+----+-------+------+------+---------+--------+-------+----------+
//	| code |lang|version|opaque| flag |remarkLen| remark |extLen | ext      |
//	| i16  | u8 | i16   | i32  | i32  | i32     |        | i32   | extLen B |
//	+------+----+-------+------+------+---------+--------+-------+----------+
//	ext = repeated { keyLen i16 | key | valLen i32 | value }
//
// lang is RocketMQ's LanguageCode ordinal (JAVA 0, CPP 1, DOTNET 2,
// PYTHON 3, DELPHI 4, ERLANG 5, RUBY 6, OTHER 7, HTTP 8, GO 9, PHP 10,
// OMS 11); unknown names encode as OTHER. We write ext keys sorted so a
// command always has one encoding.
//
// # Flag, opaque, and who answers
//
// flag bit 0 (FlagResponse) marks a response, bit 1 (FlagOneway) a request
// that wants no answer. A response copies its request's opaque; that is the
// only link between them, so responses may come back in any order. Either
// end may send requests: the broker sends CHECK_TRANSACTION_STATE (39) and
// NOTIFY_CONSUMER_IDS_CHANGED (40) to clients over the client's own
// connection, with opaques of its own; a Conn tells the two streams apart by
// the response bit.
//
// The Go client never sets the oneway bit on its oneway requests, so a
// server answers a flag-0 request even if the client will not read it; the
// answer is harmless. A request with the oneway bit is never answered.
//
// # Concurrency
//
// Each request runs in its own goroutine, at most MaxConcurrentPerConn per
// connection; at the limit the connection is not read (TCP back-pressure)
// until a handler ends, and a request that waits longer than BusyWait is
// answered SYSTEM_BUSY instead of queueing without bound. A handler that
// parks (Park: a held long-poll pull) gives its place back, so held pulls,
// one per queue, never delay a send on the same connection. Writes are whole
// frames under a per-connection lock with a write deadline; a failed or
// timed-out write closes the connection, since a partial frame would
// corrupt the stream.
//
// Handlers get a context that is cancelled when their connection closes, so
// a parked long poll ends when its client goes away or the server closes.
//
// # Limits
//
// A server bounds what one peer can take (limits.go, ServerConfig.Limits):
// connections per remote IP and in total (one over is sent a SYSTEM_BUSY
// frame with opaque 0 naming the limit, then closed), each connection's
// request rate (a token bucket; a request over it is answered SYSTEM_BUSY,
// and a connection that keeps exceeding it is closed), header size, and
// idle time (no frame for IdleTimeout while no request of the connection
// is being handled, parked ones included). A Client keeps such an
// unsolicited refusal and adds it to the error its calls fail with.
//
// # Using it
//
// A server registers a Handler per request code, like net/http:
//
//	s, err := remoting.NewServer(remoting.DefaultServerConfig())
//	s.HandleFunc(remoting.ReqSendMessage, func(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
//		resp := remoting.NewResponse(req, remoting.ResSuccess, "")
//		resp.ExtFields["msgId"] = id
//		return resp
//	})
//	s.OnConnClose(func(c *remoting.Conn) { forget(c.Value(clientIDKey)) })
//	go s.Serve(ln)
//	defer s.Shutdown(ctx)
//
// Unknown codes are answered REQUEST_CODE_NOT_SUPPORTED naming the code; a
// panicking handler is answered SYSTEM_ERROR and logged. Shutdown stops
// accepting, answers new requests SERVICE_NOT_AVAILABLE (clients retry
// that elsewhere), waits for running handlers until its context ends, then
// closes connections and waits for every goroutine it started.
//
// A handler that needs to call the peer back (CHECK_TRANSACTION_STATE to a
// producer) keeps the *Conn it was given and uses Conn.Invoke or
// Conn.SendOneway on it later.
//
// A Client keeps one connection per address, dialled on first use and
// replaced after it breaks; a broken connection fails its pending calls at
// once with an error wrapping ErrConnClosed. Calls without a deadline get
// DefaultInvokeTimeout. Failure codes come back as responses; AsError turns
// one into a *ResponseError whose Retriable method follows the official
// producer's retry set.
package remoting
