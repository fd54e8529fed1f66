package cli

import (
	"crypto/tls"
	"fmt"

	"github.com/hashicorp/go-hclog"
	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/tlsconf"
)

// serverTLSFlags are the TLS flags of the server commands (namesrv,
// broker). --tls-cert turns TLS on.
func serverTLSFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "tls-cert", Usage: "PEM certificate (chain): serve TLS with it (reloaded when the file changes)"},
		&ucli.StringFlag{Name: "tls-key", Usage: "PEM private key of --tls-cert"},
		&ucli.StringFlag{Name: "tls-ca", Usage: "PEM CA bundle that client certificates (--tls-client-auth) and, on a broker, the name servers, the leader and the raft peers must chain to"},
		&ucli.BoolFlag{Name: "tls-client-auth", Usage: "require a client certificate signed by --tls-ca (mutual TLS)"},
	}
}

// brokerTLSFlags adds the broker's raft TLS to serverTLSFlags.
func brokerTLSFlags() []ucli.Flag {
	return append(serverTLSFlags(),
		&ucli.BoolFlag{Name: "raft-tls", Value: true, Usage: "with --tls-cert, also run raft between peers over mutual TLS (needs --tls-ca); false keeps raft plaintext"},
		&ucli.StringFlag{Name: "raft-tls-cert", Usage: "raft peer certificate (default --tls-cert)"},
		&ucli.StringFlag{Name: "raft-tls-key", Usage: "raft peer key (default --tls-key)"},
		&ucli.StringFlag{Name: "raft-tls-ca", Usage: "CA the raft peers' certificates must chain to (default --tls-ca)"},
	)
}

// serverTLS builds the server config of the TLS flags, nil without
// --tls-cert.
func serverTLS(c *ucli.Context, log hclog.Logger, clientAuth bool) (*tls.Config, error) {
	if c.String("tls-cert") == "" {
		if c.String("tls-key") != "" || c.Bool("tls-client-auth") {
			return nil, fmt.Errorf("--tls-key and --tls-client-auth need --tls-cert")
		}
		return nil, nil
	}
	return tlsconf.ServerConfig{CertFile: c.String("tls-cert"), KeyFile: c.String("tls-key"), CAFile: c.String("tls-ca"),
		ClientAuth: clientAuth, Logger: log}.Server()
}

// applyBrokerTLS sets the broker's TLS from the flags: the client port
// (as asked), HTTP (server authentication only, for probes and scrapes),
// the node's own client (the CA, and its certificate for mutual TLS) and
// raft (mutual TLS).
func applyBrokerTLS(c *ucli.Context, cfg *broker.Config, rc *dledger.Config) error {
	srv, err := serverTLS(c, cfg.Logger, c.Bool("tls-client-auth"))
	if err != nil || srv == nil {
		return err
	}
	cfg.Remoting.TLS = srv
	if cfg.HTTPTLS, err = serverTLS(c, cfg.Logger, false); err != nil {
		return err
	}
	cfg.ClientTLS, err = tlsconf.ClientConfig{CAFile: c.String("tls-ca"), CertFile: c.String("tls-cert"),
		KeyFile: c.String("tls-key"), Logger: cfg.Logger}.Client()
	if err != nil {
		return err
	}
	if !c.Bool("raft-tls") {
		return nil
	}
	pick := func(name, def string) string {
		if v := c.String(name); v != "" {
			return v
		}
		return c.String(def)
	}
	if pick("raft-tls-ca", "tls-ca") == "" {
		return fmt.Errorf("raft over TLS verifies the peers: give --tls-ca or --raft-tls-ca, or --raft-tls=false")
	}
	rc.TLSServer, rc.TLSClient, err = tlsconf.Peer(pick("raft-tls-cert", "tls-cert"), pick("raft-tls-key", "tls-key"),
		pick("raft-tls-ca", "tls-ca"), cfg.Logger)
	return err
}

// clientTLSFlags are the TLS flags of the commands that are clients
// (admin, send, consume, bench). Any of them but --tls=false turns TLS on.
func clientTLSFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "tls", Usage: "dial the name servers and brokers with TLS", EnvVars: []string{"RAFTMQ_TLS"}},
		&ucli.StringFlag{Name: "tls-ca", Usage: "PEM CA bundle to verify the servers (default: system roots); implies --tls", EnvVars: []string{"RAFTMQ_TLS_CA"}},
		&ucli.BoolFlag{Name: "tls-insecure", Usage: "accept any server certificate (encrypted, not authenticated: tests only); implies --tls", EnvVars: []string{"RAFTMQ_TLS_INSECURE"}},
		&ucli.StringFlag{Name: "tls-cert", Usage: "PEM client certificate, for servers that require one; implies --tls", EnvVars: []string{"RAFTMQ_TLS_CERT"}},
		&ucli.StringFlag{Name: "tls-key", Usage: "PEM private key of --tls-cert", EnvVars: []string{"RAFTMQ_TLS_KEY"}},
		&ucli.StringFlag{Name: "tls-server-name", Usage: "name to verify in the servers' certificates (default: the host dialled)", EnvVars: []string{"RAFTMQ_TLS_SERVER_NAME"}},
	}
}

// clientTLS builds the client config of the client TLS flags, nil when
// TLS is off.
func clientTLS(c *ucli.Context) (*tls.Config, error) {
	on := c.Bool("tls") || c.String("tls-ca") != "" || c.Bool("tls-insecure") || c.String("tls-cert") != ""
	if c.IsSet("tls") && !c.Bool("tls") {
		on = false
	}
	if !on {
		return nil, nil
	}
	return tlsconf.ClientConfig{CAFile: c.String("tls-ca"), CertFile: c.String("tls-cert"), KeyFile: c.String("tls-key"),
		ServerName: c.String("tls-server-name"), InsecureSkipVerify: c.Bool("tls-insecure")}.Client()
}

// withClientTLS adds the client TLS flags to every command of cmds and
// their subcommands that has a --namesrv flag (all client commands do).
func withClientTLS(cmds ...*ucli.Command) []*ucli.Command {
	for _, cmd := range cmds {
		withClientTLS(cmd.Subcommands...)
		for _, f := range cmd.Flags {
			if hasName(f, "namesrv") {
				cmd.Flags = append(cmd.Flags, clientTLSFlags()...)
				break
			}
		}
	}
	return cmds
}

func hasName(f ucli.Flag, name string) bool {
	for _, n := range f.Names() {
		if n == name {
			return true
		}
	}
	return false
}
