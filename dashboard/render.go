package dashboard

import (
	"bytes"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/remoting"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFiles embed.FS

// staticFS serves /static/ (the embedded directory is named static too).
var staticFS fs.FS = staticFiles

// pageNames are the templates/<name>.html files, each rendered inside
// templates/layout.html.
var pageNames = []string{"cluster", "topics", "topic", "groups", "group", "messages", "message", "result", "error"}

// pages holds one parsed template set per page.
type pages struct{ sets map[string]*template.Template }

func loadPages() (*pages, error) {
	p := &pages{sets: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		p.sets[name] = t
	}
	return p, nil
}

var funcs = template.FuncMap{
	"millis": func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") },
	"body":   formatBody,
	"isText": func(b []byte) bool { return utf8.Valid(b) },
	"bytes":  formatBytes,
	"pct": func(ratio string) string {
		f, err := strconv.ParseFloat(ratio, 64)
		if err != nil {
			return "-"
		}
		return strconv.FormatFloat(100*f, 'f', 1, 64) + " %"
	},
}

// formatBody is a body as text when it is UTF-8, else as a hex dump.
func formatBody(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return hex.Dump(b)
}

// view is what layout.html renders: the page's title, which navigation
// entry is active, the error boxes and the page's own data.
type view struct {
	Title  string
	Nav    string
	Errors []errView
	Data   any
}

// errView is one error box: where the failure was answered, its RocketMQ
// response code when a broker or name server answered one, and the text.
type errView struct {
	Addr    string
	Code    string
	Message string
}

// describe turns an error into an error box.
func describe(err error) errView {
	var e *client.Error
	if errors.As(err, &e) {
		return errView{Addr: e.Addr, Code: fmt.Sprintf("%s (%d)", remoting.ResponseCodeName(e.Code), e.Code), Message: err.Error()}
	}
	return errView{Message: err.Error()}
}

// describeAll turns the non-nil errors into error boxes.
func describeAll(errs ...error) []errView {
	var out []errView
	for _, err := range errs {
		if err != nil {
			out = append(out, describe(err))
		}
	}
	return out
}

// render executes page into a buffer first, so a template failure is an
// error page, not half a page.
func (s *Server) render(w http.ResponseWriter, status int, page string, v view) {
	var buf bytes.Buffer
	if err := s.pages.sets[page].Execute(&buf, v); err != nil {
		s.log.Error("dashboard: rendering", "page", page, "error", err)
		buf.Reset()
		status = http.StatusInternalServerError
		v = view{Title: "Internal error", Errors: []errView{{Message: "dashboard: page " + page + " failed to render (see the log)"}}}
		if err := s.pages.sets["error"].Execute(&buf, v); err != nil {
			http.Error(w, "dashboard: error page failed to render", status)
			return
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if _, err := w.Write(buf.Bytes()); err != nil {
		s.log.Debug("dashboard: writing page", "page", page, "error", err)
	}
}

// fail answers with an error page.
func (s *Server) fail(w http.ResponseWriter, _ *http.Request, status int, title string, err error) {
	s.render(w, status, "error", view{Title: title, Errors: describeAll(err)})
}

// failCluster answers a request whose cluster call failed: 502, the
// cluster (not the dashboard) being at fault.
func (s *Server) failCluster(w http.ResponseWriter, r *http.Request, title string, err error) {
	s.fail(w, r, http.StatusBadGateway, title, err)
}

// badRequest answers a form with a missing or malformed field.
func (s *Server) badRequest(w http.ResponseWriter, r *http.Request, err error) {
	s.fail(w, r, http.StatusBadRequest, "Bad request", err)
}

// formatBytes is a decimal byte count in binary units ("72.6 GiB"), "-"
// when it is not a number.
func formatBytes(v string) string {
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return "-"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(n, 'f', 0, 64) + " B"
	}
	return strconv.FormatFloat(n, 'f', 1, 64) + " " + units[i]
}
