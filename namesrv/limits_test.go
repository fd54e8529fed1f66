package namesrv

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/remoting"
)

// TestServerAppliesRemotingLimits: Config.Remoting.Limits reach the name
// server's listener — with one connection allowed per IP, a second client
// from the same host is refused with the limit in its error while the
// first keeps being served.
func TestServerAppliesRemotingLimits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Remoting.Limits.MaxConnsPerIP = 1
	_, addr, cl := startServer(t, cfg)
	if resp := invoke(t, cl, addr, remoting.ReqGetAllTopicListFromNameServer, nil, nil); resp.Code != remoting.ResSuccess {
		t.Fatalf("first client: %v", resp)
	}
	second, err := remoting.NewClient(remoting.DefaultClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = second.Invoke(ctx, addr, remoting.NewRequest(remoting.ReqGetAllTopicListFromNameServer, nil, nil))
	if !errors.Is(err, remoting.ErrConnClosed) || !strings.Contains(err.Error(), "too many connections from 127.0.0.1 (limit 1)") {
		t.Fatalf("second client: %v; want it refused naming the limit", err)
	}
	if resp := invoke(t, cl, addr, remoting.ReqGetAllTopicListFromNameServer, nil, nil); resp.Code != remoting.ResSuccess {
		t.Fatalf("first client after the refusal: %v", resp)
	}
}
