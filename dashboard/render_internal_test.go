package dashboard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/raftmq/raftmq/client"
)

func newTestServer(t *testing.T) *Server {
	t.Helper()
	a, err := client.NewAdmin(client.WithNameServers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	s, err := New(Config{Admin: a})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPanicIsAnErrorPage: a handler that panics is answered with the
// error page, which shows neither the panic value nor a stack.
func TestPanicIsAnErrorPage(t *testing.T) {
	s := newTestServer(t)
	s.mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("secret-panic-value") })
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/boom", nil))
	body := w.Body.String()
	if w.Code != http.StatusInternalServerError || !strings.Contains(body, `class="error"`) || !strings.Contains(body, "/boom failed") {
		t.Fatalf("panic answered %d:\n%s", w.Code, body)
	}
	if strings.Contains(body, "secret-panic-value") || strings.Contains(body, "goroutine") {
		t.Fatalf("the page shows the panic:\n%s", body)
	}
}

func TestNewNeedsAdmin(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrNoAdmin) {
		t.Fatalf("New without an Admin: %v", err)
	}
}

// TestStaticAndHeaders: the stylesheet is served from the embedded files,
// pages forbid framing, and an unknown path is a 404.
func TestStaticAndHeaders(t *testing.T) {
	s := newTestServer(t)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/static/style.css", nil))
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/css") || !strings.Contains(w.Body.String(), ".error") {
		t.Fatalf("style.css: %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	if w.Header().Get("X-Frame-Options") != "DENY" {
		t.Fatalf("X-Frame-Options = %q", w.Header().Get("X-Frame-Options"))
	}
	w = httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/nope", nil))
	if w.Code != http.StatusNotFound {
		t.Fatalf("/nope: %d", w.Code)
	}
}

func TestFormatBodyAndBytes(t *testing.T) {
	if got := formatBody([]byte("héllo")); got != "héllo" {
		t.Errorf("text body = %q", got)
	}
	if got := formatBody([]byte{0xff, 0x00, 'a'}); !strings.HasPrefix(got, "00000000  ff 00 61") {
		t.Errorf("binary body = %q", got)
	}
	for in, want := range map[string]string{"512": "512 B", "1536": "1.5 KiB", "77964877824": "72.6 GiB", "": "-", "x": "-"} {
		if got := formatBytes(in); got != want {
			t.Errorf("formatBytes(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRenderFailureIsAnErrorPage: a page whose template fails on its
// data is answered with the error page, not half a page.
func TestRenderFailureIsAnErrorPage(t *testing.T) {
	s := newTestServer(t)
	w := httptest.NewRecorder()
	s.render(w, http.StatusOK, "cluster", view{Title: "Cluster", Data: 42}) // an int has no .Groups
	body := w.Body.String()
	if w.Code != http.StatusInternalServerError || !strings.Contains(body, "page cluster failed to render") || strings.Contains(body, "<table") {
		t.Fatalf("failed render answered %d:\n%s", w.Code, body)
	}
}
