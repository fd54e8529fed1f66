package namesrv

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/internal/tlsconf"
	"github.com/raftmq/raftmq/remoting"
)

// TestServerOverMutualTLS: with Remoting.TLS a broker with a client
// certificate registers and a route is answered over TLS; a plaintext
// client is refused with a TLS hint.
func TestServerOverMutualTLS(t *testing.T) {
	g, err := tlsconf.Generate(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if cfg.Remoting.TLS, err = (tlsconf.ServerConfig{CertFile: g.ServerCert, KeyFile: g.ServerKey, CAFile: g.CA, ClientAuth: true}).Server(); err != nil {
		t.Fatal(err)
	}
	_, addr, plain := startServer(t, cfg)
	ccfg := remoting.DefaultClientConfig()
	if ccfg.TLS, err = (tlsconf.ClientConfig{CAFile: g.CA, CertFile: g.ClientCert, KeyFile: g.ClientKey}).Client(); err != nil {
		t.Fatal(err)
	}
	cl, err := remoting.NewClient(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if resp := invoke(t, cl, addr, remoting.ReqRegisterBroker, registerExt("127.0.0.1:10911", "0", "3"), registerBody(t, "T")); resp.Code != remoting.ResSuccess {
		t.Fatalf("register over TLS = %v", resp)
	}
	if resp := invoke(t, cl, addr, remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil); resp.Code != remoting.ResSuccess {
		t.Fatalf("route over TLS = %v", resp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = plain.Invoke(ctx, addr, remoting.NewRequest(remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil))
	if err == nil || !strings.Contains(err.Error(), "dial with TLS") {
		t.Fatalf("plaintext route request on a TLS name server: %v", err)
	}
}
