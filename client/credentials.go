package client

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// Credentials are an ACL account's keys. With them a client signs every
// request as RocketMQ's AclClientRPCHook does (HMAC-SHA1 over the sorted
// header values and the body), so brokers running ACL 1.0 — raftmq's or
// Apache RocketMQ's — accept it.
type Credentials struct {
	AccessKey string
	SecretKey string
	// SecurityToken is optional; it is sent and signed when set.
	SecurityToken string
}

// Environment variables CredentialsFromEnv reads.
const (
	EnvAccessKey     = "RAFTMQ_ACCESS_KEY"
	EnvSecretKey     = "RAFTMQ_SECRET_KEY"
	EnvSecurityToken = "RAFTMQ_SECURITY_TOKEN"
)

// CredentialsFromEnv reads RAFTMQ_ACCESS_KEY, RAFTMQ_SECRET_KEY and
// RAFTMQ_SECURITY_TOKEN; ok is false when no access key is set.
func CredentialsFromEnv() (Credentials, bool) {
	c := Credentials{AccessKey: os.Getenv(EnvAccessKey), SecretKey: os.Getenv(EnvSecretKey), SecurityToken: os.Getenv(EnvSecurityToken)}
	return c, c.AccessKey != ""
}

// LoadCredentials reads a credentials file: "key: value" or "key=value"
// lines with accessKey, secretKey and optionally securityToken (the shape
// of RocketMQ's tools.yml); # starts a comment.
func LoadCredentials(path string) (Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return Credentials{}, fmt.Errorf("client: credentials: %w", err)
	}
	defer f.Close()
	var c Credentials
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.IndexAny(line, ":=")
		if i < 0 {
			return Credentials{}, fmt.Errorf("client: credentials %s line %d: want key: value", path, n)
		}
		k, v := strings.TrimSpace(line[:i]), strings.Trim(strings.TrimSpace(line[i+1:]), `"'`)
		switch k {
		case "accessKey":
			c.AccessKey = v
		case "secretKey":
			c.SecretKey = v
		case "securityToken":
			c.SecurityToken = v
		default:
			return Credentials{}, fmt.Errorf("client: credentials %s line %d: unknown key %q", path, n, k)
		}
	}
	if err := sc.Err(); err != nil {
		return Credentials{}, fmt.Errorf("client: credentials %s: %w", path, err)
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		return Credentials{}, fmt.Errorf("client: credentials %s: accessKey and secretKey are both needed", path)
	}
	return c, nil
}

// WithCredentials signs every request with c (ACL 1.0). Default: the
// RAFTMQ_ACCESS_KEY, RAFTMQ_SECRET_KEY and RAFTMQ_SECURITY_TOKEN
// environment variables when the access key is set (CredentialsFromEnv),
// else requests are not signed.
func WithCredentials(c Credentials) Opt {
	return opt(func(cfg *config) {
		if c.AccessKey != "" {
			cfg.credentials = &c
		}
	})
}

// sign adds the ACL fields to req when the client has credentials; call it
// last, once the header and body are final.
func (c *core) sign(req *remoting.Command) {
	cr := c.cfg.credentials
	if cr == nil {
		return
	}
	if req.ExtFields == nil {
		req.ExtFields = map[string]string{}
	}
	protocol.SignRequest(req.ExtFields, req.Body, cr.AccessKey, cr.SecretKey, cr.SecurityToken)
}
