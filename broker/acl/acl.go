// Package acl is RocketMQ's ACL 1.0 on the broker: accounts with an
// AccessKey and SecretKey, HMAC-SHA1 request signatures as the stock
// clients compute them, topic and group permissions, admin accounts and
// remote-address whitelists. The broker group keeps the configuration in
// its replicated metadata; this package compiles it into a Checker and
// decides each request.
package acl

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// LoadFile reads a plain_acl.yml (RocketMQ's format: globalWhiteRemoteAddresses
// and accounts) and validates it.
func LoadFile(path string) (protocol.ACLConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return protocol.ACLConfig{}, fmt.Errorf("acl: %w", err)
	}
	return Parse(b)
}

// Parse reads a plain_acl.yml's content and validates it.
func Parse(b []byte) (protocol.ACLConfig, error) {
	var cfg protocol.ACLConfig
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return protocol.ACLConfig{}, fmt.Errorf("acl: plain_acl.yml: %v", err)
	}
	if _, err := Compile(cfg); err != nil {
		return protocol.ACLConfig{}, err
	}
	return cfg, nil
}

// account is a compiled PlainAccessConfig.
type account struct {
	cfg          protocol.PlainAccessConfig
	white        addrPattern
	defaultTopic byte
	defaultGroup byte
	topics       map[string]byte
	groups       map[string]byte
}

// Checker decides requests under one ACL configuration. It is immutable.
type Checker struct {
	global   addrPatterns
	accounts map[string]*account
}

// Compile checks cfg and builds its Checker.
func Compile(cfg protocol.ACLConfig) (*Checker, error) {
	global, err := parseAddrPatterns(cfg.GlobalWhiteAddrs)
	if err != nil {
		return nil, fmt.Errorf("acl: globalWhiteRemoteAddresses: %w", err)
	}
	c := &Checker{global: global, accounts: map[string]*account{}}
	var errs []error
	for _, a := range cfg.Accounts {
		if _, dup := c.accounts[a.AccessKey]; dup {
			errs = append(errs, fmt.Errorf("acl: accessKey %s is listed twice", a.AccessKey))
			continue
		}
		ca, err := compileAccount(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.accounts[a.AccessKey] = ca
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

func compileAccount(a protocol.PlainAccessConfig) (*account, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	white, err := parseAddrPattern(a.WhiteRemoteAddress)
	if err != nil {
		return nil, fmt.Errorf("acl: account %s: whiteRemoteAddress: %w", a.AccessKey, err)
	}
	ca := &account{cfg: a, white: white, defaultTopic: protocol.ACLDeny, defaultGroup: protocol.ACLDeny,
		topics: map[string]byte{}, groups: map[string]byte{}}
	if a.DefaultTopicPerm != "" {
		ca.defaultTopic, _ = protocol.ParseACLPerm(a.DefaultTopicPerm)
	}
	if a.DefaultGroupPerm != "" {
		ca.defaultGroup, _ = protocol.ParseACLPerm(a.DefaultGroupPerm)
	}
	for _, e := range a.TopicPerms {
		name, p, _ := protocol.ParseResourcePerm(e)
		ca.topics[name] = p
	}
	for _, e := range a.GroupPerms {
		name, p, _ := protocol.ParseResourcePerm(e)
		ca.groups[name] = p
	}
	return ca, nil
}

// Denied is a refused request: the broker answers NO_PERMISSION with
// Error() as the remark. It names the account and the resource, never a
// secret.
type Denied struct{ Reason string }

// Error implements error.
func (d *Denied) Error() string { return d.Reason }

// Code is the response code of a denial.
func (*Denied) Code() int16 { return remoting.ResNoPermission }

func deny(format string, args ...any) *Denied { return &Denied{fmt.Sprintf(format, args...)} }

// Check decides req from remote (the peer's IP): nil to serve it, a
// *Denied otherwise. The order is RocketMQ's: a globally whitelisted
// address passes; else the AccessKey must name an account; a request
// from the account's whiteRemoteAddress passes unsigned; else the
// signature must match, admin codes need an admin account, and every
// resource the request touches needs its permission.
func (c *Checker) Check(req *remoting.Command, remote netip.Addr) *Denied {
	if c.global.match(remote) {
		return nil
	}
	name := remoting.CodeName(req.Code)
	ak := req.ExtFields[protocol.ACLAccessKey]
	if ak == "" {
		return deny("ACL: %s from %s carries no AccessKey, and %s is not in globalWhiteRemoteAddresses", name, remote, remote)
	}
	a, ok := c.accounts[ak]
	if !ok {
		return deny("ACL: no account %q (%s from %s)", ak, name, remote)
	}
	if a.white.match(remote) {
		return nil
	}
	if !signatureMatches(req, a.cfg.SecretKey) {
		return deny("ACL: signature check failed for accessKey=%s (%s from %s)", ak, name, remote)
	}
	if protocol.ACLNeedsAdmin(req.Code) && !a.cfg.Admin {
		return deny("ACL: %s (code %d) needs an admin account, and accessKey=%s is not one", name, req.Code, ak)
	}
	if a.cfg.Admin && len(a.topics) == 0 && len(a.groups) == 0 {
		return nil
	}
	for _, n := range needs(req) {
		owned, def := a.perm(n)
		if !protocol.ACLAllows(n.perm, owned) {
			how := "has"
			if def {
				how = "has by default"
			}
			return deny("ACL: accessKey=%s %s %s on %s %s; %s needs %s", ak, how, protocol.ACLPermString(owned),
				n.kind(), n.name, name, protocol.ACLPermString(n.perm))
		}
	}
	return nil
}

// signatureMatches checks the request's Signature under secret. The
// signature covers every ext field but itself, SecurityToken included, as
// the Java broker checks it. (The official Go client leaves a
// SecurityToken out of what it signs; such requests are refused, as a
// RocketMQ broker refuses them. Accepting a signature without the token
// would let a token's bytes move into the next value unnoticed, since the
// content concatenates values without separators.)
func signatureMatches(req *remoting.Command, secret string) bool {
	sig := req.ExtFields[protocol.ACLSignature]
	return sig != "" && eq(sig, protocol.ACLSign(protocol.ACLContent(req.ExtFields, req.Body), secret))
}

func eq(a, b string) bool { return hmac.Equal([]byte(a), []byte(b)) }

// perm is the account's permission on n and whether it is a default.
func (a *account) perm(n need) (byte, bool) {
	if n.group {
		if p, ok := a.groups[n.name]; ok {
			return p, false
		}
		return a.defaultGroup, true
	}
	if p, ok := a.topics[n.name]; ok {
		return p, false
	}
	return a.defaultTopic, true
}

// Mask returns cfg with every secret replaced, for listing.
func Mask(cfg protocol.ACLConfig) protocol.ACLConfig {
	out := protocol.ACLConfig{GlobalWhiteAddrs: append([]string(nil), cfg.GlobalWhiteAddrs...)}
	for _, a := range cfg.Accounts {
		a.SecretKey = strings.Repeat("*", 8)
		out.Accounts = append(out.Accounts, a)
	}
	return out
}
