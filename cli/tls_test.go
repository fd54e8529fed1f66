package cli

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/internal/tlsconf"
)

func testCerts(t *testing.T) tlsconf.Generated {
	t.Helper()
	g, err := tlsconf.Generate(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestBrokerTLSFlags(t *testing.T) {
	if cfg := parseBrokerConfig(t); cfg.Remoting.TLS != nil || cfg.ClientTLS != nil || cfg.HTTPTLS != nil || cfg.Raft.TLSServer != nil {
		t.Fatal("TLS on without --tls-cert")
	}
	g := testCerts(t)
	cfg := parseBrokerConfig(t, "--tls-cert", g.ServerCert, "--tls-key", g.ServerKey, "--tls-ca", g.CA, "--tls-client-auth")
	if cfg.Remoting.TLS == nil || cfg.HTTPTLS == nil || cfg.ClientTLS == nil || cfg.Raft.TLSServer == nil || cfg.Raft.TLSClient == nil {
		t.Fatalf("TLS not applied everywhere: %+v", cfg)
	}
	if cfg.Remoting.TLS.ClientAuth != tls.RequireAndVerifyClientCert || cfg.HTTPTLS.ClientAuth != tls.NoClientCert {
		t.Fatalf("client auth: remoting %v, HTTP %v", cfg.Remoting.TLS.ClientAuth, cfg.HTTPTLS.ClientAuth)
	}
	cfg = parseBrokerConfig(t, "--tls-cert", g.ServerCert, "--tls-key", g.ServerKey, "--raft-tls=false")
	if cfg.Remoting.TLS == nil || cfg.Raft.TLSServer != nil {
		t.Fatal("--raft-tls=false: raft should stay plaintext")
	}
}

func TestBrokerTLSFlagErrors(t *testing.T) {
	g := testCerts(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", g.ServerCert, "--tls-key", g.ServerKey}, "--tls-ca"},
		{[]string{"--tls-cert", g.ServerCert, "--tls-key", g.CA, "--tls-ca", g.CA}, "invalid file"},
		{[]string{"--tls-cert", "/nonexistent.pem", "--tls-key", g.ServerKey, "--tls-ca", g.CA}, "nonexistent.pem"},
		{[]string{"--tls-key", g.ServerKey}, "need --tls-cert"},
	} {
		app := &ucli.App{Flags: brokerFlags(), Action: func(c *ucli.Context) error {
			_, err := brokerConfig(c)
			return err
		}}
		base := []string{"broker", "--node-id", "n1", "--peers", "n1/127.0.0.1:1/127.0.0.1:2", "--data", t.TempDir()}
		err := app.Run(append(base, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error mentioning %q", tc.args, err, tc.want)
		}
	}
}

func TestClientTLSFlags(t *testing.T) {
	g := testCerts(t)
	run := func(args ...string) *tls.Config {
		t.Helper()
		var got *tls.Config
		cmd := &ucli.Command{Name: "x", Flags: []ucli.Flag{namesrvFlag()}, Action: func(c *ucli.Context) error {
			var err error
			got, err = clientTLS(c)
			return err
		}}
		app := &ucli.App{Commands: withClientTLS(cmd)}
		if err := app.Run(append([]string{"raftmq", "x"}, args...)); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if run() != nil {
		t.Fatal("TLS on without a flag")
	}
	if c := run("--tls"); c == nil || c.RootCAs != nil || c.InsecureSkipVerify {
		t.Fatalf("--tls: %+v", c)
	}
	if c := run("--tls-ca", g.CA, "--tls-cert", g.ClientCert, "--tls-key", g.ClientKey); c == nil || c.RootCAs == nil || c.GetClientCertificate == nil {
		t.Fatalf("--tls-ca with a client certificate: %+v", c)
	}
	if c := run("--tls-insecure"); c == nil || !c.InsecureSkipVerify {
		t.Fatalf("--tls-insecure: %+v", c)
	}
	t.Setenv("RAFTMQ_TLS_CA", g.CA)
	if c := run(); c == nil || c.RootCAs == nil {
		t.Fatalf("RAFTMQ_TLS_CA: %+v", c)
	}
	if c := run("--tls=false"); c != nil {
		t.Fatal("--tls=false kept TLS on")
	}
}

// Every client command has the TLS flags; the server commands have their
// own.
func TestEveryClientCommandHasTLSFlags(t *testing.T) {
	var walk func(prefix string, cmds []*ucli.Command)
	walk = func(prefix string, cmds []*ucli.Command) {
		for _, cmd := range cmds {
			walk(prefix+" "+cmd.Name, cmd.Subcommands)
			var ns, tlsFlag bool
			for _, f := range cmd.Flags {
				ns = ns || hasName(f, "namesrv")
				tlsFlag = tlsFlag || hasName(f, "tls-cert")
			}
			if ns && !tlsFlag {
				t.Errorf("%s has --namesrv but no TLS flags", prefix+" "+cmd.Name)
			}
		}
	}
	walk("raftmq", App(nil, nil).Commands)
}
