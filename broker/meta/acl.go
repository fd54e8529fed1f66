package meta

// The group's ACL: seeded once (from a node's plain_acl.yml), then changed
// only by the ACL admin codes, each change a command, so every node of the
// group enforces the same accounts and a new node inherits them through
// the log or a snapshot. The seed also carries the group's peer account,
// with which a node signs what it forwards to the leader.

import (
	"maps"
	"slices"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wire"
	"github.com/raftmq/raftmq/protocol"
)

// ACL command types (see the frozen list in commands.go).
const (
	CmdACLSeed          dledger.CommandType = 13
	CmdACLPutAccount    dledger.CommandType = 14
	CmdACLDeleteAccount dledger.CommandType = 15
	CmdACLGlobalWhite   dledger.CommandType = 16
)

// ACL is the group's applied ACL.
type ACL struct {
	// Enabled: a seed was applied; until then no request is checked.
	Enabled bool
	// Version is the raft index of the last change.
	Version uint64
	Config  protocol.ACLConfig
	// Peer is the account nodes of the group sign forwarded requests
	// with (an admin account; never listed).
	Peer protocol.PlainAccessConfig
}

type aclState struct {
	enabled  bool
	version  uint64
	global   []string
	accounts map[string]protocol.PlainAccessConfig
	peer     protocol.PlainAccessConfig
}

func newACLState() aclState { return aclState{accounts: map[string]protocol.PlainAccessConfig{}} }

// ACLSeedCommand enables the ACL with Config and the group's peer account,
// unless a seed was applied before (then it does nothing: the group's
// ACL, changed since, wins over any node's file).
type ACLSeedCommand struct {
	Config protocol.ACLConfig
	Peer   protocol.PlainAccessConfig
}

// ACLPutAccountCommand creates or replaces an account.
type ACLPutAccountCommand struct{ Account protocol.PlainAccessConfig }

// ACLDeleteAccountCommand deletes an account.
type ACLDeleteAccountCommand struct{ AccessKey string }

// ACLGlobalWhiteCommand replaces globalWhiteRemoteAddresses.
type ACLGlobalWhiteCommand struct{ Addrs []string }

// Type implements dledger.Command.
func (*ACLSeedCommand) Type() dledger.CommandType { return CmdACLSeed }

// Type implements dledger.Command.
func (*ACLPutAccountCommand) Type() dledger.CommandType { return CmdACLPutAccount }

// Type implements dledger.Command.
func (*ACLDeleteAccountCommand) Type() dledger.CommandType { return CmdACLDeleteAccount }

// Type implements dledger.Command.
func (*ACLGlobalWhiteCommand) Type() dledger.CommandType { return CmdACLGlobalWhite }

// AppendBody implements dledger.Command.
func (c *ACLSeedCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	encodeACLConfig(e, c.Config)
	encodeAccount(e, c.Peer)
	return e.B, e.Err
}

// AppendBody implements dledger.Command.
func (c *ACLPutAccountCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	encodeAccount(e, c.Account)
	return e.B, e.Err
}

// AppendBody implements dledger.Command.
func (c *ACLDeleteAccountCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	e.Str(c.AccessKey)
	return e.B, e.Err
}

// AppendBody implements dledger.Command.
func (c *ACLGlobalWhiteCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	encodeStrs(e, c.Addrs)
	return e.B, e.Err
}

func decodeACL(t dledger.CommandType, d *wire.Decoder) (dledger.Command, bool) {
	switch t {
	case CmdACLSeed:
		return &ACLSeedCommand{Config: decodeACLConfig(d), Peer: decodeAccount(d)}, true
	case CmdACLPutAccount:
		return &ACLPutAccountCommand{Account: decodeAccount(d)}, true
	case CmdACLDeleteAccount:
		return &ACLDeleteAccountCommand{AccessKey: d.Str()}, true
	case CmdACLGlobalWhite:
		return &ACLGlobalWhiteCommand{Addrs: decodeStrs(d)}, true
	}
	return nil, false
}

// applyACL applies an ACL command at index. Caller holds mu.
func (a *aclState) apply(index uint64, c dledger.Command) {
	switch c := c.(type) {
	case *ACLSeedCommand:
		if a.enabled {
			return
		}
		a.enabled, a.peer = true, c.Peer
		a.global = slices.Clone(c.Config.GlobalWhiteAddrs)
		for _, acc := range c.Config.Accounts {
			a.accounts[acc.AccessKey] = acc
		}
	case *ACLPutAccountCommand:
		a.accounts[c.Account.AccessKey] = c.Account
	case *ACLDeleteAccountCommand:
		delete(a.accounts, c.AccessKey)
	case *ACLGlobalWhiteCommand:
		a.global = slices.Clone(c.Addrs)
	default:
		return
	}
	a.version = index
}

func (a *aclState) view() ACL {
	cfg := protocol.ACLConfig{GlobalWhiteAddrs: slices.Clone(a.global)}
	for _, k := range slices.Sorted(maps.Keys(a.accounts)) {
		cfg.Accounts = append(cfg.Accounts, a.accounts[k])
	}
	return ACL{Enabled: a.enabled, Version: a.version, Config: cfg, Peer: a.peer}
}

// ACL returns the group's applied ACL.
func (s *State) ACL() ACL {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.acl.view()
}

// ACLVersion is ACL().Version without taking the state's lock: every
// request's ACL check reads it.
func (s *State) ACLVersion() uint64 { return s.aclVersion.Load() }

func (a *aclState) encode(e *wire.Encoder) {
	v := a.view()
	e.Bool(v.Enabled)
	e.U64(v.Version)
	encodeACLConfig(e, v.Config)
	encodeAccount(e, v.Peer)
}

func decodeACLState(d *wire.Decoder) aclState {
	a := newACLState()
	a.enabled = d.Bool()
	a.version = d.U64()
	cfg := decodeACLConfig(d)
	a.global = cfg.GlobalWhiteAddrs
	for _, acc := range cfg.Accounts {
		a.accounts[acc.AccessKey] = acc
	}
	a.peer = decodeAccount(d)
	return a
}

func encodeACLConfig(e *wire.Encoder, c protocol.ACLConfig) {
	encodeStrs(e, c.GlobalWhiteAddrs)
	e.Count(len(c.Accounts))
	for _, a := range c.Accounts {
		encodeAccount(e, a)
	}
}

func decodeACLConfig(d *wire.Decoder) protocol.ACLConfig {
	c := protocol.ACLConfig{GlobalWhiteAddrs: decodeStrs(d)}
	for i, n := 0, d.Count(8); i < n && d.Err == nil; i++ {
		c.Accounts = append(c.Accounts, decodeAccount(d))
	}
	return c
}

func encodeAccount(e *wire.Encoder, a protocol.PlainAccessConfig) {
	e.Str(a.AccessKey)
	e.Str(a.SecretKey)
	e.Str(a.WhiteRemoteAddress)
	e.Bool(a.Admin)
	e.Str(a.DefaultTopicPerm)
	e.Str(a.DefaultGroupPerm)
	encodeStrs(e, a.TopicPerms)
	encodeStrs(e, a.GroupPerms)
}

func decodeAccount(d *wire.Decoder) protocol.PlainAccessConfig {
	return protocol.PlainAccessConfig{AccessKey: d.Str(), SecretKey: d.Str(), WhiteRemoteAddress: d.Str(), Admin: d.Bool(),
		DefaultTopicPerm: d.Str(), DefaultGroupPerm: d.Str(), TopicPerms: decodeStrs(d), GroupPerms: decodeStrs(d)}
}

func encodeStrs(e *wire.Encoder, ss []string) {
	e.Count(len(ss))
	for _, s := range ss {
		e.Str(s)
	}
}

func decodeStrs(d *wire.Decoder) []string {
	var out []string
	for i, n := 0, d.Count(2); i < n && d.Err == nil; i++ {
		out = append(out, d.Str())
	}
	return out
}
