package broker

// Queue locks for orderly consumption: LOCK_BATCH_MQ (41) and
// UNLOCK_BATCH_MQ (42), as RocketMQ's RebalanceLockManager. The body is
// {"consumerGroup","clientId","mqSet":[{"topic","brokerName","queueId"}]}.
// A lock is granted to the client that holds it (renewing it) or when the
// queue is free or its lock expired (Config.LockExpiry, 60 s; clients renew
// every 20 s); a queue held by another client within its expiry is left
// out of the answer {"lockOKMQSet":[...]}. Unlock releases the caller's
// own locks and answers SUCCESS without a body.
//
// Locks are leader-local (DESIGN §5): a follower forwards both codes to
// the leader, and a node drops every lock when it stops leading, so after
// a failover clients re-acquire them on the new leader. Pulls are not
// checked against locks, as in RocketMQ. A malformed body is SYSTEM_ERROR
// with a remark.

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

type lockEntry struct {
	clientID string
	renewed  time.Time
}

// lockManager holds the leader's queue locks per consumer group.
type lockManager struct {
	expiry time.Duration
	now    func() time.Time
	mu     sync.Mutex
	groups map[string]map[protocol.MessageQueue]*lockEntry
}

func newLockManager(expiry time.Duration) *lockManager {
	return &lockManager{expiry: expiry, now: time.Now, groups: map[string]map[protocol.MessageQueue]*lockEntry{}}
}

// tryLock grants or renews the locks of mqs it can and returns those.
func (m *lockManager) tryLock(group, clientID string, mqs []protocol.MessageQueue) []protocol.MessageQueue {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	locks := m.groups[group]
	if locks == nil {
		locks = map[protocol.MessageQueue]*lockEntry{}
		m.groups[group] = locks
	}
	granted := make([]protocol.MessageQueue, 0, len(mqs))
	for _, mq := range mqs {
		e := locks[mq]
		if e != nil && e.clientID != clientID && now.Sub(e.renewed) <= m.expiry {
			continue // held by another live client
		}
		locks[mq] = &lockEntry{clientID: clientID, renewed: now}
		granted = append(granted, mq)
	}
	return granted
}

// unlock releases clientID's locks among mqs.
func (m *lockManager) unlock(group, clientID string, mqs []protocol.MessageQueue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	locks := m.groups[group]
	for _, mq := range mqs {
		if e := locks[mq]; e != nil && e.clientID == clientID {
			delete(locks, mq)
		}
	}
	if len(locks) == 0 {
		delete(m.groups, group)
	}
}

// clear drops every lock (this node stopped leading).
func (m *lockManager) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groups = map[string]map[protocol.MessageQueue]*lockEntry{}
}

// lockService serves the queue-lock codes on the leader.
type lockService struct {
	rep   *replica
	locks *lockManager
}

func (s *lockService) register(m mux) {
	m.HandleFunc(remoting.ReqLockBatchMQ, s.rep.leaderOnly(s.lockBatch))
	m.HandleFunc(remoting.ReqUnlockBatchMQ, s.rep.leaderOnly(s.unlockBatch))
}

func parseLockBody(req *remoting.Command) (protocol.LockBatchRequest, *remoting.Command) {
	var body protocol.LockBatchRequest
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return body, errResponse(req, remoting.ResSystemError, "bad lock batch body: %v", err)
	}
	if body.ConsumerGroup == "" || body.ClientID == "" {
		return body, errResponse(req, remoting.ResSystemError, "lock batch body needs consumerGroup and clientId")
	}
	return body, nil
}

func (s *lockService) lockBatch(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	body, resp := parseLockBody(req)
	if resp != nil {
		return resp
	}
	granted := s.locks.tryLock(body.ConsumerGroup, body.ClientID, body.MQSet)
	return jsonResponse(req, protocol.LockBatchResponse{LockOKMQSet: granted})
}

func (s *lockService) unlockBatch(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	body, resp := parseLockBody(req)
	if resp != nil {
		return resp
	}
	s.locks.unlock(body.ConsumerGroup, body.ClientID, body.MQSet)
	return okResponse(req)
}
