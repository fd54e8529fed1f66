package protocol

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
)

// ACL 1.0 request fields (RocketMQ's SessionCredentials). A signed
// request carries them in its extFields.
const (
	ACLAccessKey     = "AccessKey"
	ACLSignature     = "Signature"
	ACLSecurityToken = "SecurityToken"
	// aclUniqueKeyQuery is a flag QUERY_MESSAGE adds after signing; the
	// signature does not cover it.
	aclUniqueKeyQuery = "_UNIQUE_KEY_QUERY"
)

// ACLContent is what a request's signature covers: the values of its
// extFields in the order of their sorted keys (Signature and
// _UNIQUE_KEY_QUERY left out), then the body — RocketMQ's
// AclUtils.combineRequestContent.
func ACLContent(ext map[string]string, body []byte) []byte {
	keys := make([]string, 0, len(ext))
	n := len(body)
	for k, v := range ext {
		if k == ACLSignature || k == aclUniqueKeyQuery {
			continue
		}
		keys = append(keys, k)
		n += len(v)
	}
	slices.Sort(keys)
	out := make([]byte, 0, n)
	for _, k := range keys {
		out = append(out, ext[k]...)
	}
	return append(out, body...)
}

// ACLSign is the signature of content under secret: base64 of its
// HMAC-SHA1, as RocketMQ's AclUtils.calSignature.
func ACLSign(content []byte, secret string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(content)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SignRequest adds the ACL fields to ext (the request's extFields, which
// must be complete: the signature covers them and body). token may be "".
func SignRequest(ext map[string]string, body []byte, accessKey, secretKey, token string) {
	delete(ext, ACLSignature)
	ext[ACLAccessKey] = accessKey
	if token != "" {
		ext[ACLSecurityToken] = token
	} else {
		delete(ext, ACLSecurityToken)
	}
	ext[ACLSignature] = ACLSign(ACLContent(ext, body), secretKey)
}

// ACL permissions of an account on a topic or group (RocketMQ's
// acl.common.Permission). DENY wins over the others.
const (
	ACLDeny byte = 1
	ACLPub  byte = 1 << 1
	ACLSub  byte = 1 << 2
	// ACLAny is PUB|SUB.
	ACLAny = ACLPub | ACLSub
)

// ParseACLPerm parses DENY, PUB, SUB, PUB|SUB (or SUB|PUB).
func ParseACLPerm(s string) (byte, error) {
	switch strings.TrimSpace(s) {
	case "DENY":
		return ACLDeny, nil
	case "PUB":
		return ACLPub, nil
	case "SUB":
		return ACLSub, nil
	case "PUB|SUB", "SUB|PUB":
		return ACLAny, nil
	}
	return 0, fmt.Errorf("acl: permission %q is not DENY, PUB, SUB or PUB|SUB", s)
}

// ACLPermString formats a permission as ParseACLPerm reads it.
func ACLPermString(p byte) string {
	switch {
	case p&ACLDeny != 0:
		return "DENY"
	case p&ACLAny == ACLAny:
		return "PUB|SUB"
	case p&ACLPub != 0:
		return "PUB"
	case p&ACLSub != 0:
		return "SUB"
	}
	return "DENY"
}

// ACLAllows reports whether owned grants needed, as RocketMQ's
// Permission.checkPermission.
func ACLAllows(needed, owned byte) bool {
	if owned&ACLDeny != 0 {
		return false
	}
	return needed&^owned&ACLAny == 0
}

// PlainAccessConfig is one ACL account, as in plain_acl.yml and in the
// ACL admin bodies (RocketMQ's PlainAccessConfig). Perms are
// "resource=PERM" strings.
type PlainAccessConfig struct {
	AccessKey          string   `json:"accessKey" yaml:"accessKey"`
	SecretKey          string   `json:"secretKey" yaml:"secretKey"`
	WhiteRemoteAddress string   `json:"whiteRemoteAddress" yaml:"whiteRemoteAddress"`
	Admin              bool     `json:"admin" yaml:"admin"`
	DefaultTopicPerm   string   `json:"defaultTopicPerm" yaml:"defaultTopicPerm"`
	DefaultGroupPerm   string   `json:"defaultGroupPerm" yaml:"defaultGroupPerm"`
	TopicPerms         []string `json:"topicPerms" yaml:"topicPerms"`
	GroupPerms         []string `json:"groupPerms" yaml:"groupPerms"`
}

// ACLConfig is a whole ACL: plain_acl.yml's content and the body of
// GET_BROKER_CLUSTER_ACL_CONFIG (RocketMQ's AclConfig; secrets masked
// there).
type ACLConfig struct {
	GlobalWhiteAddrs []string            `json:"globalWhiteAddrs" yaml:"globalWhiteRemoteAddresses"`
	Accounts         []PlainAccessConfig `json:"plainAccessConfigs" yaml:"accounts"`
}

// Validate reports every problem of one account: an access key and a
// secret key of at least 6 characters (RocketMQ's rule), permissions that
// parse, "resource=PERM" entries.
func (a PlainAccessConfig) Validate() error {
	var errs []string
	if len(a.AccessKey) < 6 {
		errs = append(errs, fmt.Sprintf("accessKey %q is shorter than 6 characters", a.AccessKey))
	}
	if strings.ContainsAny(a.AccessKey, " \t\r\n,=") {
		errs = append(errs, fmt.Sprintf("accessKey %q holds a space, comma or '='", a.AccessKey))
	}
	if len(a.SecretKey) < 6 {
		errs = append(errs, fmt.Sprintf("the secretKey of %s is shorter than 6 characters", a.AccessKey))
	}
	for _, p := range []struct{ name, v string }{{"defaultTopicPerm", a.DefaultTopicPerm}, {"defaultGroupPerm", a.DefaultGroupPerm}} {
		if p.v == "" {
			continue
		}
		if _, err := ParseACLPerm(p.v); err != nil {
			errs = append(errs, p.name+": "+err.Error())
		}
	}
	for _, list := range []struct {
		name  string
		perms []string
	}{{"topicPerms", a.TopicPerms}, {"groupPerms", a.GroupPerms}} {
		for _, e := range list.perms {
			if _, _, err := ParseResourcePerm(e); err != nil {
				errs = append(errs, list.name+": "+err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("acl: account %s: %s", a.AccessKey, strings.Join(errs, "; "))
	}
	return nil
}

// ParseResourcePerm splits "resource=PERM".
func ParseResourcePerm(e string) (string, byte, error) {
	name, perm, ok := strings.Cut(e, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return "", 0, fmt.Errorf("acl: %q is not resource=PERM", e)
	}
	p, err := ParseACLPerm(perm)
	if err != nil {
		return "", 0, err
	}
	return name, p, nil
}

// SplitList splits a comma-separated header value (topicPerms,
// globalWhiteAddrs), dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// DecodeCreateAccessConfigHeader reads UPDATE_AND_CREATE_ACL_CONFIG's
// header (RocketMQ's CreateAccessConfigRequestHeader).
func DecodeCreateAccessConfigHeader(ext map[string]string) (PlainAccessConfig, error) {
	h := ReadHeader(ext)
	a := PlainAccessConfig{
		AccessKey:          h.Str("accessKey"),
		SecretKey:          h.OptStr("secretKey"),
		WhiteRemoteAddress: h.OptStr("whiteRemoteAddress"),
		Admin:              h.OptBool("admin", false),
		DefaultTopicPerm:   h.OptStr("defaultTopicPerm"),
		DefaultGroupPerm:   h.OptStr("defaultGroupPerm"),
		TopicPerms:         SplitList(h.OptStr("topicPerms")),
		GroupPerms:         SplitList(h.OptStr("groupPerms")),
	}
	return a, h.Err()
}

// Ext is the account as UPDATE_AND_CREATE_ACL_CONFIG's header.
func (a PlainAccessConfig) Ext() map[string]string {
	return map[string]string{
		"accessKey": a.AccessKey, "secretKey": a.SecretKey, "whiteRemoteAddress": a.WhiteRemoteAddress,
		"admin": fmt.Sprint(a.Admin), "defaultTopicPerm": a.DefaultTopicPerm, "defaultGroupPerm": a.DefaultGroupPerm,
		"topicPerms": strings.Join(a.TopicPerms, ","), "groupPerms": strings.Join(a.GroupPerms, ","),
	}
}

// aclAdminCodes are the requests only an admin account may make: RocketMQ's
// Permission.ADMIN_CODE, the ACL codes, offset resets and raftmq's
// membership, leadership and snapshot codes.
var aclAdminCodes = map[int16]bool{
	17: true, 25: true, 200: true, 207: true, 215: true, // topic, broker config, group
	50: true, 51: true, 52: true, 53: true, 54: true, // ACL
	205: true, 222: true, 327: true, // wipe and add write perm, reset offsets
	9101: true, 9102: true, 9103: true, 9104: true, 9110: true, // raft membership, leadership, snapshot, ACL seed
}

// ACLNeedsAdmin reports whether request code needs an admin account.
func ACLNeedsAdmin(code int16) bool { return aclAdminCodes[code] }
