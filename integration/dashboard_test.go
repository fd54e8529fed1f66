package integration

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDevDashboard: `raftmq dev` serves the dashboard on --dashboard-port
// and prints its URL; `raftmq dashboard` serves the same cluster on its
// own --listen, and exits 0 on SIGINT.
func TestDevDashboard(t *testing.T) {
	ns := strconv.Itoa(freePort(t))
	bp, rp := strconv.Itoa(20000+freePort(t)%20000), strconv.Itoa(40000+freePort(t)%20000)
	dp := strconv.Itoa(freePort(t))
	p := startProc(t, "dev", "--data", filepath.Join(t.TempDir(), "data"), "--namesrv-port", ns, "--broker-port", bp,
		"--raft-port", rp, "--http-port", "0", "--dashboard-port", dp)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(p.output(), "Stop with Ctrl-C") })
	url := "http://127.0.0.1:" + dp + "/"
	if !strings.Contains(p.output(), "Dashboard:        "+url+"\n") {
		t.Fatalf("dev banner lacks the dashboard URL %s:\n%s", url, p.output())
	}
	page := httpGet(t, url)
	if strings.Count(page, `<tr class="node`) != 3 || strings.Count(page, `<tr class="node leader">`) != 1 {
		t.Fatalf("dev dashboard cluster page:\n%s", page)
	}

	lp := strconv.Itoa(freePort(t))
	d := startProc(t, "dashboard", "--namesrv", "127.0.0.1:"+ns, "--listen", "127.0.0.1:"+lp)
	waitFor(t, 10*time.Second, func() bool { return strings.Contains(d.output(), "raftmq dashboard: http://127.0.0.1:"+lp+"/") })
	if page := httpGet(t, "http://127.0.0.1:"+lp+"/"); strings.Count(page, `<tr class="node leader">`) != 1 {
		t.Fatalf("raftmq dashboard cluster page:\n%s", page)
	}
	for _, proc := range []*proc{d, p} {
		if err := proc.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if err := proc.wait(t, 20*time.Second); err != nil {
			t.Fatalf("exit after SIGINT: %v\n%s", err, proc.output())
		}
	}
}

// httpGet GETs url and fails unless it answers 200.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	return get(t, &http.Client{Timeout: 20 * time.Second}, url)
}

// httpsGet is httpGet verifying the server with the CA in caFile.
func httpsGet(t *testing.T, caFile, url string) string {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", caFile)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	return get(t, &http.Client{Transport: tr, Timeout: 20 * time.Second}, url)
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, b)
	}
	return string(b)
}
