//go:build unix

package dashboard_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// browser renders pages with headless Chromium (Debian's chromium
// package; `make chromium` installs it).
type browser struct {
	t         *testing.T
	path      string
	profile   string // a throwaway --user-data-dir
	artifacts string // where screenshots go
}

// newBrowser finds chromium on PATH. Without it the test is skipped,
// or fails when RAFTMQ_REQUIRE_CHROMIUM=1 (make test sets it).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("RAFTMQ_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("chromium is not on PATH (RAFTMQ_REQUIRE_CHROMIUM=1; `make chromium` installs it): %v", err)
		}
		t.Skipf("chromium is not on PATH (`make chromium` installs it): %v", err)
	}
	return &browser{t: t, path: p, profile: t.TempDir(), artifacts: artifactsDir(t)}
}

// artifactsDir is $RAFTMQ_ARTIFACTS/dashboard when that is set (the
// screenshots outlive the test), else a temporary directory.
func artifactsDir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("RAFTMQ_ARTIFACTS")
	if d == "" {
		return t.TempDir()
	}
	d = filepath.Join(d, "dashboard")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// Screenshot size: --window-size.
const shotW, shotH = 1280, 900

// render loads url, saves a screenshot as <name>.png and returns the DOM
// after the page loaded (--dump-dom) and the screenshot.
func (b *browser) render(name, url string) (string, image.Image) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	shot := filepath.Join(b.artifacts, name+".png")
	_ = os.Remove(shot)
	cmd := exec.CommandContext(ctx, b.path, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+b.profile, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", shotW, shotH), "--dump-dom", url)
	// Its own process group, so a timeout kills the helpers it forked too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		b.t.Fatalf("chromium %s: %v\n%s", url, err, tail(errOut.String(), 2000))
	}
	f, err := os.Open(shot)
	if err != nil {
		b.t.Fatalf("chromium %s wrote no screenshot: %v\n%s", url, err, tail(errOut.String(), 2000))
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", shot, err)
	}
	if s := img.Bounds().Size(); s.X != shotW || s.Y != shotH {
		b.t.Fatalf("screenshot %s is %v, want %dx%d", shot, s, shotW, shotH)
	}
	b.t.Logf("%s: %s (%d bytes of DOM)", name, shot, out.Len())
	return out.String(), img
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// isHeaderColour reports whether the pixel is style.css's header
// background, #14202e: the stylesheet loaded and applied.
func isHeaderColour(img image.Image, x, y int) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	near := func(v uint32, want int) bool { d := int(v>>8) - want; return d > -8 && d < 8 }
	return near(r, 0x14) && near(g, 0x20) && near(b, 0x2e)
}

// TestDashboardInChromium renders every page in headless Chromium
// against a real group and asserts on the DOM the browser built: the
// node table has 3 rows with one Leader, the topic page counts its
// queues and messages, the group page shows the lag of the messages
// produced, a key query returns the key's message bodies, a message
// page shows its body, and a failure is an error box.
func TestDashboardInChromium(t *testing.T) {
	b := newBrowser(t)
	e := start(t)
	const topic, group, key, n = "web-topic", "web-group", "web-key", 5
	e.createTopic(topic, 4)
	bounds, err := e.admin.TopicQueueBounds(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range bounds {
		if err := e.admin.UpdateConsumerOffset(context.Background(), group, q.Queue, 0); err != nil {
			t.Fatal(err)
		}
	}
	sent := e.sendN(topic, key, n)

	dom, img := b.render("cluster", e.base+"/")
	leaderOf(t, dom)
	if !isHeaderColour(img, 3, 3) {
		t.Fatalf("cluster screenshot: pixel (3,3) is %v, not the header's #14202e: style.css not applied", img.At(3, 3))
	}

	dom, _ = b.render("topics", e.base+"/topics")
	if !regexp.MustCompile(`<a href="/topics/web-topic">web-topic</a></td>\s*<td>1</td><td class="read-queues">4</td>`).MatchString(dom) {
		t.Fatalf("topics page lacks web-topic with 4 read queues:\n%s", dom)
	}

	dom, _ = b.render("topic", e.base+"/topics/"+topic)
	if !strings.Contains(dom, fmt.Sprintf(`<small id="queue-count">4 queues, %d messages stored</small>`, n)) || strings.Count(dom, `<td class="min">0</td>`) != 4 {
		t.Fatalf("topic page:\n%s", dom)
	}

	dom, _ = b.render("group", e.base+"/groups/"+group)
	if !strings.Contains(dom, fmt.Sprintf(`<strong id="total-lag">%d</strong>`, n)) || strings.Count(dom, "<tr><td>web-topic</td>") != 4 {
		t.Fatalf("group page does not show lag %d over 4 queues:\n%s", n, dom)
	}
	if !strings.Contains(dom, `<p class="empty" id="no-connections">`) {
		t.Fatalf("the group page does not say that no consumer is online:\n%s", dom)
	}
	if !strings.Contains(dom, `<input name="topic" list="group-topics" required="" value="web-topic">`) {
		t.Fatalf("the reset form does not default to the lagging topic:\n%s", dom)
	}

	dom, _ = b.render("messages", e.base+"/messages?topic="+topic+"&key="+key)
	if !strings.Contains(dom, fmt.Sprintf(`<small id="result-count">%d messages</small>`, n)) {
		t.Fatalf("key query does not count %d messages:\n%s", n, dom)
	}
	for i := range n {
		if !strings.Contains(dom, fmt.Sprintf(`<td class="body">%s-body-%d</td>`, key, i)) {
			t.Fatalf("key query lacks body %d:\n%s", i, dom)
		}
	}

	dom, _ = b.render("message", e.base+"/messages?id="+sent[2].OffsetMsgID)
	if !strings.Contains(dom, `<pre id="body">web-key-body-2</pre>`) || !strings.Contains(dom, "<td>KEYS</td><td>web-key</td>") {
		t.Fatalf("message page:\n%s", dom)
	}

	dom, _ = b.render("error", e.base+"/topics/no-such-topic")
	if !strings.Contains(dom, `<div class="error" role="alert">`) || !strings.Contains(dom, "no-such-topic") {
		t.Fatalf("error page:\n%s", dom)
	}
}
