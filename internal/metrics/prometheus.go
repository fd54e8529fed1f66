package metrics

import (
	"bufio"
	"io"
	"sort"
	"strconv"
	"strings"

	gometrics "github.com/armon/go-metrics"
)

// Reset drops every series of name (gauges recomputed at each scrape, so
// that a deleted topic's or group's series go with it).
func (s *Sink) Reset(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sr := range s.series {
		if sr.name == name {
			delete(s.series, id)
		}
	}
}

// WritePrometheus writes every series in the Prometheus text exposition
// format (version 0.0.4), sorted by name and labels.
func (s *Sink) WritePrometheus(w io.Writer) error {
	s.mu.RLock()
	all := make([]*series, 0, len(s.series))
	for _, sr := range s.series {
		all = append(all, sr)
	}
	s.mu.RUnlock()
	sort.Slice(all, func(i, j int) bool {
		if all[i].name != all[j].name {
			return all[i].name < all[j].name
		}
		return all[i].labels < all[j].labels
	})
	bw := bufio.NewWriter(w)
	typed := ""
	for _, sr := range all {
		if sr.name != typed {
			typed = sr.name
			bw.WriteString("# TYPE " + sr.name + " " + [...]string{"counter", "gauge", "histogram"}[sr.kind] + "\n")
		}
		sr.write(bw)
	}
	return bw.Flush()
}

func (sr *series) write(w *bufio.Writer) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.kind != Histogram {
		w.WriteString(sr.name + sr.labels + " " + formatFloat(sr.value) + "\n")
		return
	}
	var cum uint64
	for i, c := range sr.counts {
		cum += c
		le := "+Inf"
		if i < len(sr.bounds) {
			le = formatFloat(sr.bounds[i])
		}
		w.WriteString(sr.name + "_bucket" + withLabel(sr.labels, "le", le) + " " + strconv.FormatUint(cum, 10) + "\n")
	}
	w.WriteString(sr.name + "_sum" + sr.labels + " " + formatFloat(sr.sum) + "\n")
	w.WriteString(sr.name + "_count" + sr.labels + " " + strconv.FormatUint(cum, 10) + "\n")
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// renderLabels is {name="value",...} in the given order, "" for none.
func renderLabels(labels []gometrics.Label) string {
	if len(labels) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(Name([]string{l.Name}))
		b.WriteString(`="`)
		b.WriteString(escapeValue(l.Value))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// withLabel adds name="value" to rendered labels.
func withLabel(labels, name, value string) string {
	if labels == "" {
		return "{" + name + `="` + value + `"}`
	}
	return labels[:len(labels)-1] + "," + name + `="` + value + `"}`
}

var valueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeValue(v string) string { return valueEscaper.Replace(v) }
