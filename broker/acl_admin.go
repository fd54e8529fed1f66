package broker

// ACL admin codes. UPDATE_AND_CREATE_ACL_CONFIG (50, RocketMQ's
// CreateAccessConfigRequestHeader), DELETE_ACL_CONFIG (51, ext accessKey)
// and UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53, ext globalWhiteAddrs,
// comma-separated) are proposed on the leader (a follower forwards them)
// and hold on every node once applied. GET_BROKER_CLUSTER_ACL_INFO (52)
// answers the applied version in its header; it and
// GET_BROKER_CLUSTER_ACL_CONFIG (54) answer the ACL as a JSON AclConfig
// body with every secret masked. The guard lets only admin accounts in.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/raftmq/raftmq/broker/acl"
	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

func (s *aclService) register(m mux) {
	m.HandleFunc(remoting.ReqUpdateAndCreateACLConfig, s.rep.leaderOnly(s.putAccount))
	m.HandleFunc(remoting.ReqDeleteACLConfig, s.rep.leaderOnly(s.deleteAccount))
	m.HandleFunc(remoting.ReqUpdateGlobalWhiteAddrsConfig, s.rep.leaderOnly(s.setGlobalWhite))
	m.HandleFunc(remoting.ReqGetBrokerClusterACLInfo, s.info)
	m.HandleFunc(remoting.ReqGetBrokerClusterACLConfig, s.config)
	m.HandleFunc(remoting.ReqACLSeed, s.rep.leaderOnly(s.seedFromPeer))
}

// enabled answers a change on a group with no ACL; nil when it has one.
func (s *aclService) enabled(req *remoting.Command, failed int16) *remoting.Command {
	if !s.meta.ACL().Enabled {
		return errResponse(req, failed, "the ACL is not enabled on broker group %s: start a node with --acl plain_acl.yml to seed it", s.rep.group)
	}
	return nil
}

// validate compiles the applied ACL changed by edit.
func (s *aclService) validate(edit func(*protocol.ACLConfig)) error {
	cfg := s.meta.ACL().Config
	edit(&cfg)
	_, err := acl.Compile(cfg)
	return err
}

func (s *aclService) putAccount(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	const failed = remoting.ResUpdateAndCreateACLConfigFailed
	a, err := protocol.DecodeCreateAccessConfigHeader(req.ExtFields)
	if err != nil {
		return errResponse(req, failed, "%v", err)
	}
	if resp := s.enabled(req, failed); resp != nil {
		return resp
	}
	if strings.HasPrefix(a.AccessKey, aclPeerPrefix) {
		return errResponse(req, failed, "accessKey %s: the prefix %s is the broker group's own", a.AccessKey, aclPeerPrefix)
	}
	if _, err := s.rep.ready(ctx); err != nil {
		return s.rep.proposeFailure(ctx, req, err)
	}
	verb := "created"
	for _, old := range s.meta.ACL().Config.Accounts {
		if old.AccessKey == a.AccessKey {
			verb = "updated"
			if a.SecretKey == "" {
				a.SecretKey = old.SecretKey // an update may leave the secret as it is
			}
		}
	}
	err = s.validate(func(c *protocol.ACLConfig) {
		c.Accounts = append(removeAccount(c.Accounts, a.AccessKey), a)
	})
	if err != nil {
		return errResponse(req, failed, "%v", err)
	}
	if _, err := s.rep.propose(ctx, &meta.ACLPutAccountCommand{Account: a}); err != nil {
		return s.rep.proposeFailure(ctx, req, err)
	}
	s.log.Info("ACL account "+verb, "access_key", a.AccessKey, "admin", a.Admin)
	return okResponse(req)
}

func removeAccount(list []protocol.PlainAccessConfig, ak string) []protocol.PlainAccessConfig {
	out := list[:0:0]
	for _, a := range list {
		if a.AccessKey != ak {
			out = append(out, a)
		}
	}
	return out
}

func (s *aclService) deleteAccount(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	const failed = remoting.ResDeleteACLConfigFailed
	h := protocol.ReadHeader(req.ExtFields)
	ak := h.Str("accessKey")
	if err := h.Err(); err != nil {
		return errResponse(req, failed, "%v", err)
	}
	if resp := s.enabled(req, failed); resp != nil {
		return resp
	}
	if _, err := s.rep.ready(ctx); err != nil {
		return s.rep.proposeFailure(ctx, req, err)
	}
	found := false
	for _, a := range s.meta.ACL().Config.Accounts {
		found = found || a.AccessKey == ak
	}
	if !found {
		return errResponse(req, failed, "no ACL account %q", ak)
	}
	if _, err := s.rep.propose(ctx, &meta.ACLDeleteAccountCommand{AccessKey: ak}); err != nil {
		return s.rep.proposeFailure(ctx, req, err)
	}
	s.log.Info("ACL account deleted", "access_key", ak)
	return okResponse(req)
}

func (s *aclService) setGlobalWhite(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	const failed = remoting.ResUpdateGlobalWhiteAddrsFailed
	addrs := protocol.SplitList(req.ExtFields["globalWhiteAddrs"])
	if resp := s.enabled(req, failed); resp != nil {
		return resp
	}
	if err := s.validate(func(c *protocol.ACLConfig) { c.GlobalWhiteAddrs = addrs }); err != nil {
		return errResponse(req, failed, "%v", err)
	}
	if _, err := s.rep.propose(ctx, &meta.ACLGlobalWhiteCommand{Addrs: addrs}); err != nil {
		return s.rep.proposeFailure(ctx, req, err)
	}
	s.log.Info("ACL global whitelist replaced", "addresses", strings.Join(addrs, ","))
	return okResponse(req)
}

// aclView is the masked ACL this node applied (or its seed file's, before
// the seed is applied).
func (s *aclService) aclView() (protocol.ACLConfig, uint64, bool) {
	a := s.meta.ACL()
	if !a.Enabled && s.seed != nil {
		return acl.Mask(*s.seed), 0, false
	}
	return acl.Mask(a.Config), a.Version, a.Enabled
}

func (s *aclService) info(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	cfg, version, enabled := s.aclView()
	resp := jsonResponse(req, cfg)
	dv, _ := json.Marshal(protocol.DataVersion{Counter: int64(version)})
	resp.ExtFields["version"] = string(dv)
	resp.ExtFields["allAclFileVersion"] = "{}"
	resp.ExtFields["brokerName"] = s.rep.group
	resp.ExtFields["brokerAddr"] = s.rep.self.RemotingAddr
	resp.ExtFields["clusterName"] = s.cluster
	resp.ExtFields["enabled"] = fmt.Sprint(enabled)
	return resp
}

func (s *aclService) config(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	cfg, _, _ := s.aclView()
	return jsonResponse(req, cfg)
}
