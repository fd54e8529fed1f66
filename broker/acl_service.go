package broker

// ACL 1.0 on the broker. The group's ACL lives in its replicated metadata
// (meta.ACL): a node started with --acl seeds it (the first seed wins; a
// later file is ignored and logged), the ACL admin codes change it, and
// every node enforces what it applied, so a change on the leader holds on
// every node as soon as they apply it. Until the seed is applied, a node
// with a file enforces its file. A group without a seed checks nothing.
//
// A node forwards what only the leader can do; the forwarded copy is
// signed with the group's peer account (an admin account the seed
// creates with a random secret, never listed), since the client's
// signature cannot cover the forwarding mark.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/acl"
	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// aclPeerPrefix starts the peer account's access key.
const aclPeerPrefix = "raftmq.peer."

// aclService checks requests and serves the ACL admin codes.
type aclService struct {
	rep     *replica
	meta    *meta.State
	seed    *protocol.ACLConfig // this node's --acl file, nil without one
	cluster string
	log     hclog.Logger

	mu      sync.Mutex
	cur     atomic.Pointer[compiledACL]
	lastLog atomic.Int64 // unix ns of the last denial logged
	denials atomic.Int64
}

// compiledACL is the checker of one applied ACL version.
type compiledACL struct {
	version uint64
	enabled bool
	checker *acl.Checker
	peer    protocol.PlainAccessConfig
}

// current is the checker to use now: the applied ACL's, else the seed
// file's, else none (nil checker).
func (s *aclService) current() *compiledACL {
	v := s.meta.ACLVersion()
	if c := s.cur.Load(); c != nil && c.version == v {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cur.Load(); c != nil && c.version == v {
		return c
	}
	a := s.meta.ACL()
	next := &compiledACL{version: a.Version, enabled: a.Enabled, peer: a.Peer}
	var cfg *protocol.ACLConfig
	switch {
	case a.Enabled:
		c := a.Config
		if a.Peer.AccessKey != "" {
			c.Accounts = append(c.Accounts, a.Peer)
		}
		cfg = &c
	case s.seed != nil:
		cfg = s.seed
	}
	if cfg != nil {
		ch, err := acl.Compile(*cfg)
		if err != nil {
			// Changes are validated before they are proposed; keep the
			// last good checker rather than open the door.
			s.log.Error("the group's ACL does not compile; keeping the previous one", "version", a.Version, "error", err)
			if old := s.cur.Load(); old != nil {
				return old
			}
			ch, _ = acl.Compile(protocol.ACLConfig{})
		}
		next.checker = ch
	}
	s.cur.Store(next)
	return next
}

// guard wraps m so every processor installed through it runs only for
// requests the ACL allows.
func (s *aclService) guard(m mux) mux { return guardedMux{m, s} }

type guardedMux struct {
	inner mux
	acl   *aclService
}

func (g guardedMux) HandleFunc(code int16, f func(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command) {
	g.inner.HandleFunc(code, func(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
		if d := g.acl.check(c, req); d != nil {
			return remoting.NewResponse(req, d.Code(), d.Error())
		}
		return f(ctx, c, req)
	})
}

// check decides req from c.
func (s *aclService) check(c *remoting.Conn, req *remoting.Command) *acl.Denied {
	cur := s.current()
	if cur.checker == nil {
		return nil
	}
	d := cur.checker.Check(req, remoteIP(c))
	if d != nil {
		s.denials.Add(1)
		now := time.Now().UnixNano()
		if last := s.lastLog.Load(); now-last > int64(time.Second) && s.lastLog.CompareAndSwap(last, now) {
			s.log.Warn("request refused by the ACL", "remote", c.RemoteAddr().String(), "reason", d.Error(),
				"refused_total", s.denials.Load())
		}
	}
	return d
}

func remoteIP(c *remoting.Conn) netip.Addr {
	if c == nil {
		return netip.Addr{}
	}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	}
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// signForward signs a request this node forwards to the leader with the
// group's peer account, when the group has one.
func (s *aclService) signForward(req *remoting.Command) {
	peer := s.current().peer
	if peer.AccessKey == "" {
		return
	}
	protocol.SignRequest(req.ExtFields, req.Body, peer.AccessKey, peer.SecretKey, "")
}

// aclSeedRetry is how often a node with a file that the group has not
// applied tries to seed it.
const aclSeedRetry = 500 * time.Millisecond

// seedLoop runs on every node with an --acl file until the group's ACL
// is seeded: the leader proposes the file, a follower hands it to the
// leader (ACL_SEED), so the group is seeded whichever node leads.
func (s *aclService) seedLoop(stop <-chan struct{}) {
	if s.seed == nil {
		return
	}
	t := time.NewTicker(aclSeedRetry)
	defer t.Stop()
	for {
		if a := s.meta.ACL(); a.Enabled {
			if a.Version > 0 {
				s.log.Info("the group's ACL is seeded; later changes go through raftmq acl, this node's --acl file is not read again",
					"version", a.Version, "accounts", len(a.Config.Accounts))
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.rep.forwardTimeout)
		if err := s.trySeed(ctx); err != nil {
			s.log.Debug("seeding the group's ACL", "error", err)
		}
		cancel()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func (s *aclService) trySeed(ctx context.Context) error {
	if s.rep.isLeader() {
		return s.proposeSeed(ctx, *s.seed)
	}
	body, err := json.Marshal(s.seed)
	if err != nil {
		return err
	}
	resp := s.rep.forward(ctx, remoting.NewRequest(remoting.ReqACLSeed, map[string]string{}, body))
	if resp.Code != remoting.ResSuccess {
		return fmt.Errorf("leader answered %s: %s", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	return nil
}

// proposeSeed seeds the group's ACL with cfg unless it has one.
func (s *aclService) proposeSeed(ctx context.Context, cfg protocol.ACLConfig) error {
	if _, err := s.rep.ready(ctx); err != nil {
		return err
	}
	if s.meta.ACL().Enabled {
		return nil
	}
	peer, err := newPeerAccount(s.rep.group)
	if err != nil {
		return err
	}
	if _, err := s.rep.propose(ctx, &meta.ACLSeedCommand{Config: cfg, Peer: peer}); err != nil {
		return err
	}
	s.log.Info("seeded the group's ACL", "accounts", len(cfg.Accounts), "global_white_addresses", len(cfg.GlobalWhiteAddrs))
	return nil
}

// seedFromPeer is the leader's side of ACL_SEED.
func (s *aclService) seedFromPeer(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var cfg protocol.ACLConfig
	if err := json.Unmarshal(req.Body, &cfg); err != nil {
		return errResponse(req, remoting.ResSystemError, "ACL seed body is not an AclConfig: %v", err)
	}
	if _, err := acl.Compile(cfg); err != nil {
		return errResponse(req, remoting.ResUpdateAndCreateACLConfigFailed, "%v", err)
	}
	if err := s.proposeSeed(ctx, cfg); err != nil {
		return s.rep.proposeFailure(ctx, req, err)
	}
	return okResponse(req)
}

func newPeerAccount(group string) (protocol.PlainAccessConfig, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return protocol.PlainAccessConfig{}, err
	}
	return protocol.PlainAccessConfig{AccessKey: aclPeerPrefix + group, SecretKey: base64.RawURLEncoding.EncodeToString(b), Admin: true}, nil
}
