package cli

import (
	"crypto/tls"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/broker/acl"
	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/protocol"
)

// credentialFlags are the ACL credentials of every client command (those
// with a --namesrv flag): flags, the RAFTMQ_* environment variables, or a
// file in the shape of RocketMQ's tools.yml.
func credentialFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "access-key", Usage: "ACL access key to sign requests with", EnvVars: []string{client.EnvAccessKey}},
		&ucli.StringFlag{Name: "secret-key", Usage: "ACL secret key (prefer the environment variable or --credentials)", EnvVars: []string{client.EnvSecretKey}},
		&ucli.StringFlag{Name: "security-token", Usage: "ACL security token (optional)", EnvVars: []string{client.EnvSecurityToken}},
		&ucli.StringFlag{Name: "credentials", Usage: "file with accessKey: and secretKey: lines (as RocketMQ's tools.yml)", EnvVars: []string{"RAFTMQ_CREDENTIALS"}},
	}
}

// addCredentialFlags gives every command that has a --namesrv flag, at any
// depth, the credential flags.
func addCredentialFlags(cmds []*ucli.Command) {
	for _, cmd := range cmds {
		addCredentialFlags(cmd.Subcommands)
		has := false
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				has = has || n == "namesrv"
			}
		}
		if has && cmd.Name != "broker" {
			cmd.Flags = append(cmd.Flags, credentialFlags()...)
		}
	}
}

// credentials are what the credential flags give; zero when none are set
// (the SDK then reads the environment itself).
func credentials(c *ucli.Context) (client.Credentials, error) {
	if path := c.String("credentials"); path != "" {
		return client.LoadCredentials(path)
	}
	return client.Credentials{AccessKey: c.String("access-key"), SecretKey: c.String("secret-key"),
		SecurityToken: c.String("security-token")}, nil
}

// clientSecurity is what a client command's credential and TLS flags
// give (zero and nil when unset).
func clientSecurity(c *ucli.Context) (client.Credentials, *tls.Config, error) {
	cr, err := credentials(c)
	if err != nil {
		return cr, nil, err
	}
	tc, err := clientTLS(c)
	return cr, tc, err
}

// aclSeed loads the --acl file of a server command; nil without one.
func aclSeed(c *ucli.Context) (*protocol.ACLConfig, error) {
	path := c.String("acl")
	if path == "" {
		return nil, nil
	}
	a, err := acl.LoadFile(path)
	if err != nil {
		return nil, err
	}
	return &a, nil
}
