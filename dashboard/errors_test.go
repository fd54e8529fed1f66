package dashboard_test

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/dashboard"
	"github.com/raftmq/raftmq/message"
)

// errorBox fails unless body is an answer with status want that shows an
// error box holding every one of parts.
func errorBox(t *testing.T, what string, code, want int, body string, parts ...string) {
	t.Helper()
	if code != want || !strings.Contains(body, `<div class="error" role="alert">`) {
		t.Fatalf("%s: status %d (want %d), error box missing:\n%s", what, code, want, body)
	}
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Fatalf("%s: error box lacks %q:\n%s", what, p, body)
		}
	}
	if strings.Contains(body, "goroutine ") || strings.Contains(body, "panic") {
		t.Fatalf("%s: the page shows a Go panic:\n%s", what, body)
	}
}

// TestFailuresRenderErrorBoxes: a failed cluster call is an error page
// naming the address that answered and its response code; bad input is a
// 400; a cross-site POST is refused.
func TestFailuresRenderErrorBoxes(t *testing.T) {
	e := start(t)
	code, body := e.get("/messages?id=zz")
	errorBox(t, "malformed id", code, http.StatusBadGateway, body, "invalid message id")

	node := netip.MustParseAddrPort(e.g.Addr(0))
	missing := message.EncodeOffsetMsgID(node, 1<<40)
	code, body = e.get("/messages?id=" + missing)
	errorBox(t, "id of no message", code, http.StatusBadGateway, body, `<span class="err-addr">`+node.String()+`</span>`, `<span class="err-code">`)

	code, body = e.get("/topics/no-such-topic")
	errorBox(t, "unknown topic", code, http.StatusBadGateway, body, "no-such-topic")

	code, body = e.post("/cluster/transfer", url.Values{"group": {"broker-zz"}})
	errorBox(t, "transfer of an unknown group", code, http.StatusBadGateway, body, "broker-zz")

	code, body = e.post("/cluster/transfer", url.Values{})
	errorBox(t, "transfer without a group", code, http.StatusBadRequest, body)

	code, body = e.post("/topics/dash-x/send", url.Values{"body": {""}})
	errorBox(t, "empty body", code, http.StatusBadRequest, body, "empty")

	req, err := http.NewRequest(http.MethodPost, e.base+"/cluster/transfer", strings.NewReader("group=broker-a"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	code, body = e.do(req)
	errorBox(t, "cross-site POST", code, http.StatusForbidden, body, "another site")
	leaderOf(t, e.mustGet("/")) // still 3 nodes, one leader: nothing was done
}

// TestNameServerDown: with no name server listening, every page is an
// error page naming it, not a hang or a crash.
func TestNameServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	admin, err := client.NewAdmin(client.WithNameServers(dead))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	srv, err := dashboard.New(dashboard.Config{Admin: admin})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	hs := newServer(t, srv)
	e.base = hs
	for _, p := range []string{"/", "/topics", "/groups", "/groups/g1", "/messages?topic=t&key=k"} {
		code, body := e.get(p)
		want := http.StatusBadGateway
		if strings.HasPrefix(p, "/groups/") || strings.HasPrefix(p, "/messages") {
			want = http.StatusOK // the page renders its form, with the error above it
		}
		errorBox(t, p, code, want, body, dead)
	}
	code, body := e.post("/topics/t/send", url.Values{"body": {"x"}})
	errorBox(t, "send without a producer", code, http.StatusNotFound, body, "sending is off")
}
