// Package client is raftmq's Go SDK: a Producer, a TransactionProducer,
// push and pull consumers, and an Admin. It speaks Apache RocketMQ 4.x's
// remoting protocol, so it also works against RocketMQ brokers.
//
// # Model
//
// A cluster is a set of broker groups; each group (a brokerName) is three
// nodes replicating one commitlog with Raft. Name servers map a topic to its
// route: the queues each group holds and the group's node addresses by
// brokerId, where id 0 is the current leader and 1, 2 the followers. A
// message queue is (topic, brokerName, queueId); it lives on the group, not
// on a node, so it survives leader changes.
//
// Every client (a producer, an Admin, a consumer) owns one core: one
// remoting connection per address, a route cache, the client id
// ("ip@instance", the instance defaulting to the process id), a route
// refresh every 30 s and a HEART_BEAT to every known broker node every 30 s
// (an Admin, which needs no Start, runs neither).
// Routes are fetched with GET_ROUTEINFO_BY_TOPIC from one name server at a
// time, moving to the next when one fails.
//
// A Producer and the consumers belong to a group, the first argument of
// their constructors (NewProducer("pg"), NewPushConsumer("order-service"));
// an empty or invalid group is an ErrInvalidOption. The rest is
// configured by functional options typed by the kind of client they apply
// to, so that one a kind does not read is a compile error: an Opt
// (WithNameServers, WithLogger, WithRequestTimeout, WithTLS, ...) goes to any
// constructor, a MemberOpt (WithInstanceName, WithHeartbeatInterval,
// WithRouteRefreshInterval) to a producer or a consumer but not to an
// Admin, which runs no loops, a SendOpt (WithSendTimeout, WithSelector,
// ...) to either producer, a ProducerOpt (WithAsyncBatching) to
// NewProducer only, a TransactionProducerOpt (WithCheckWorkers) to
// NewTransactionProducer only, a ConsumerOpt (WithConsumeFrom,
// WithMessageModel, ...) to either consumer, a PushConsumerOpt
// (WithConsumeGoroutines, WithOrderly, ...) to NewPushConsumer only. Each option's doc names its default.
// Every call takes a context; sends are also bounded by the send timeout
// and other requests by the request timeout, whichever ends first.
//
// # Errors
//
// A broker's failure answer is an *Error carrying the RocketMQ response code
// and remark; Error.Retriable and IsRetriable say whether trying again may
// help. Sentinels (ErrNoRoute, ErrClosed, ErrMessageTooLarge, ...) are
// tested with errors.Is.
//
// # Failover
//
// The official clients follow a new leader only at their next 30-second
// route poll. This package treats a connection failure, a timeout, or a
// SERVICE_NOT_AVAILABLE or SYSTEM_ERROR answer (which a group gives while it
// elects a leader) as a failover: it marks the address as suspect, fetches
// the topic's route at once (concurrent failures share one fetch), and
// retries at the route's id 0; while the route still names a dead node, it
// tries the group's other nodes, because every raftmq node forwards writes
// to its leader. Such retries continue, with a short backoff, until the send
// timeout, beyond the retry count that applies to other retriable answers.
// A kill of a leader thus costs the election time (about a second) of
// delayed sends, not failed ones. A retried send whose first attempt was in
// fact stored is stored twice: delivery is at least once.
//
// A node that freezes instead of failing (a paused process, a partition
// that drops packets) is noticed by the connection itself: a call that
// waited a second on a connection that received nothing for as long
// sends a liveness probe, and the connection is closed when that goes
// unanswered for another second (remoting.ClientConfig.ProbeAfter). So a
// pull, which is waited for as long as the broker may hold it (the
// suspend timeout, WithSuspendTimeout) rather than the request timeout,
// still leaves a frozen node about 2 s in.
//
// # Producing
//
//	p, err := client.NewProducer("pg", client.WithNameServers("127.0.0.1:9876"))
//	...
//	if err := p.Start(ctx); err != nil { ... }
//	defer p.Close(ctx)
//	msg := &message.Message{Topic: "orders", Body: []byte("hello")}
//	msg.SetTags("created")
//	res, err := p.Send(ctx, msg)
//
// Send, SendAsync, SendOneway and SendBatch share the queue selection:
// round robin with latency fault avoidance by default (a group that just
// failed or answered slowly is skipped for a while), HashSelector for
// per-key ordering, or any Selector. Bodies over 4 KiB are zlib-compressed;
// each message gets a UNIQ_KEY (its msgId).
//
// # Transactions
//
// A TransactionProducer sends RocketMQ 4.x transactional messages. The
// message goes as a half message, which the broker stores but does not
// deliver; once it is stored the executor runs the local transaction, and
// its decision goes to the broker in END_TRANSACTION:
//
//	producer                                      broker group (leader)
//	SEND_MESSAGE_V2 TRAN_MSG=true PGROUP=pg    →  stores the half message
//	  sysFlag |= 0x4 (prepared)
//	                                           ←  msgId (UNIQ_KEY), offsetMsgId,
//	                                              queueOffset, transactionId
//	executor(ctx, msg, arg)
//	END_TRANSACTION commitOrRollback 8|12|0    →  8: delivers it to its topic
//	  tranStateTableOffset = queueOffset          12: discards it
//	  commitLogOffset from offsetMsgId            0: holds it in doubt
//	  msgId, transactionId
//	  fromTransactionCheck=false
//
//	later, for a half in doubt, to any producer of the group
//	                                           ←  CHECK_TRANSACTION_STATE (oneway),
//	                                              body: the half message
//	checker(ctx, msg)
//	END_TRANSACTION fromTransactionCheck=true  →  on the connection the check came on
//
//	tp, err := client.NewTransactionProducer("pg", execute, check, client.WithNameServers("127.0.0.1:9876"))
//	...
//	res, err := tp.SendMessageInTransaction(ctx, msg, order)
//	// err: the half was not stored and execute did not run.
//	// res.State: execute's decision; res.EndErr: END_TRANSACTION was not
//	// delivered, and the broker's check-back will decide.
//
// END_TRANSACTION fails over like a send, within a send timeout of its
// own. Commit and rollback go as requests, so a refusal is seen;
// unknown goes oneway, because RocketMQ brokers do not answer it (nor a
// check-back's unknown). A half stored with a status other than SendOK is
// rolled back without running the executor, as the official clients do.
// Check-backs wait in a queue of CheckQueueSize for the checker's workers
// (one by default, WithCheckWorkers); one that finds the queue full, or
// names another producer group, is dropped and logged: the broker asks
// again. A panic in the executor or the checker counts as
// UnknownTransaction.
//
// # Request-reply
//
// Producer.Request sends a message and waits for the consumer's reply;
// RequestAsync calls back with it. The consumer builds the reply with
// NewReplyMessage and sends it with any Producer's Send, which uses
// SEND_REPLY_MESSAGE_V2 for it; the broker pushes it to the requester
// (PUSH_REPLY_MESSAGE_TO_CLIENT). Both sides interoperate with the
// official RocketMQ clients. A request whose reply does not arrive within
// its timeout fails with ErrRequestTimeout; a late reply is dropped.
//
// # Message trace
//
// WithTrace(topic) on a producer or a push consumer records each send and
// each delivery and handler outcome in the trace topic (RMQ_SYS_TRACE_TOPIC
// by default), in the official clients' record layout, batched and sent
// by an inner producer; tracing never fails or blocks a send or a handler.
// Admin.QueryTrace (and `raftmq message trace --id`) reads a message's
// timeline back, whichever client wrote it.
//
// # Consuming
//
// A PushConsumer pulls for you: one long-polling pull loop per assigned
// queue feeds a process queue, and a worker pool runs the handler
// (20 goroutines, one message per call by default):
//
//	c, err := client.NewPushConsumer("order-service", client.WithNameServers("127.0.0.1:9876"))
//	err = c.Subscribe("orders", "created || paid", func(ctx context.Context, msgs []*message.MessageExt) client.ConsumeResult {
//		...
//		return client.ConsumeSuccess
//	})
//	err = c.Start(ctx)
//	defer c.Close(ctx) // finishes running handlers, commits offsets
//
// Subscribe takes a tag expression ("*" or "" for every message, "A || B"
// for either tag): the broker filters by tag hash and the client drops
// the collisions. SubscribeSelector takes a MessageSelector, Tag(expr) or
// an SQL92 condition on the message's properties (TAGS, KEYS and user
// properties), which the broker alone evaluates:
//
//	err = c.SubscribeSelector("orders", client.SQL92("amount > 100 AND TAGS IN ('created')"), handler)
//
// An SQL92 subscription goes in heartbeats and in each PULL_MESSAGE with
// expressionType SQL92 and no tags. The client cannot parse SQL92, so a
// bad condition is not refused by Subscribe or Start: the broker answers
// every pull with SUBSCRIPTION_PARSE_FAILED, which the consumer logs as an
// error once per queue, retrying the queue every 3 s (a broker with the
// property filter off answers SYSTEM_ERROR, handled alike).
//
// Clustering (the default) shares a group's queues among its members,
// rebalanced at start, every 20 s and whenever the broker announces a
// member change (NOTIFY_CONSUMER_IDS_CHANGED), with AVG, AVG_BY_CIRCLE,
// consistent-hash or machine-room allocation; broadcasting gives every
// member every message and keeps offsets in a local file. Only the smallest
// unacknowledged offset of a queue is committed (every 5 s and on Close), so
// a crash redelivers, never skips. ConsumeRetryLater sends the message back
// to the broker (CONSUMER_SEND_MSG_BACK: %RETRY%group after delay level
// 3+reconsumeTimes, the dead-letter queue after 16 tries); if that fails it
// is retried locally and the offset waits for it. Pulling a queue pauses
// above 1000 cached messages, 100 MiB or an offset span of 2000.
//
// WithOrderly consumes each queue with one handler at a time, in offset
// order, under a broker lock (LOCK_BATCH_MQ, renewed every 20 s and at once
// after a leader change); a retry suspends the queue and redelivers in
// place. A PullConsumer instead hands batches to Poll and commits only when
// told (Commit), with Seek and SeekTimestamp to move a queue.
//
// Both pull each queue from the node the broker's last answer suggested
// (suggestWhichBrokerId): a follower while the consumer is far behind on
// a cold backlog, the leader otherwise and after any failed pull there.
//
// # Administration
//
// Admin creates, lists and deletes topics (on every group of a cluster or
// one), reads routes, cluster and per-node runtime info, reports a consumer
// group's lag per queue, resets its offsets to a timestamp, reports each
// queue's offsets and last store time (TopicStats), changes a topic's
// permission keeping its queues (SetTopicPerm), and looks messages up by
// key or unique key (every group, exact matches, in a store-time range), by
// offsetMsgId (the store host, else its group mates) or by queue offset
// (ViewMessageByQueueOffset). ScanQueue and ScanQueueByTime hand a queue's
// offset or store-time range to a callback, pulled in batches. The raftmq
// CLI's admin commands are built on it.
package client
