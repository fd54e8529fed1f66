package namesrv

import (
	"context"
	"sync"

	"github.com/raftmq/raftmq/remoting"
)

// namespaceOrderTopic is the KV namespace whose values become a route's
// orderTopicConf, as in RocketMQ.
const namespaceOrderTopic = "ORDER_TOPIC_CONFIG"

// kvStore is the name server's small namespace/key/value table. Like
// RocketMQ's it lives in memory; operators re-put after a restart.
type kvStore struct {
	mu sync.RWMutex
	m  map[string]map[string]string
}

func newKVStore() *kvStore { return &kvStore{m: map[string]map[string]string{}} }

func (k *kvStore) put(ns, key, value string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m[ns] == nil {
		k.m[ns] = map[string]string{}
	}
	k.m[ns][key] = value
}

func (k *kvStore) get(ns, key string) (string, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	v, ok := k.m[ns][key]
	return v, ok
}

func (k *kvStore) delete(ns, key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m[ns], key)
}

func kvArgs(req *remoting.Command, needValue bool) (ns, key, value string, bad *remoting.Command) {
	ns, key, value = req.ExtFields["namespace"], req.ExtFields["key"], req.ExtFields["value"]
	if ns == "" || key == "" || (needValue && value == "") {
		return "", "", "", fail(req, remoting.ResSystemError, "namesrv: KV config needs namespace, key%s",
			map[bool]string{true: " and value", false: ""}[needValue])
	}
	return ns, key, value, nil
}

func (s *Server) putKV(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ns, key, value, bad := kvArgs(req, true)
	if bad != nil {
		return bad
	}
	s.kv.put(ns, key, value)
	return remoting.NewResponse(req, remoting.ResSuccess, "")
}

func (s *Server) getKV(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ns, key, _, bad := kvArgs(req, false)
	if bad != nil {
		return bad
	}
	v, ok := s.kv.get(ns, key)
	if !ok {
		return fail(req, remoting.ResQueryNotFound, "No config item, Namespace: %s Key: %s", ns, key)
	}
	resp := remoting.NewResponse(req, remoting.ResSuccess, "")
	resp.ExtFields["value"] = v
	return resp
}

func (s *Server) deleteKV(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ns, key, _, bad := kvArgs(req, false)
	if bad != nil {
		return bad
	}
	s.kv.delete(ns, key)
	return remoting.NewResponse(req, remoting.ResSuccess, "")
}
