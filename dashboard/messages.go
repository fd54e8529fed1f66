package dashboard

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/raftmq/raftmq/message"
)

// defaultQuerySpan is how far back a key query looks without a begin.
const defaultQuerySpan = 72 * time.Hour

// messagesData is the message query page.
type messagesData struct {
	Topic, Key, Begin, End string
	// Queried: the form was submitted, so an empty Results means none.
	Queried bool
	Results []*message.MessageExt
}

// messageData is one message's page.
type messageData struct {
	ID    string
	Msg   *message.MessageExt
	Props [][2]string
}

func (s *Server) messagesPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if id := q.Get("id"); id != "" {
		s.messagePage(w, r, id)
		return
	}
	now := time.Now()
	d := messagesData{Topic: q.Get("topic"), Key: q.Get("key"), Begin: q.Get("begin"), End: q.Get("end")}
	if d.Begin == "" {
		d.Begin = formatTime(now.Add(-defaultQuerySpan))
	}
	if d.End == "" {
		d.End = formatTime(now.Add(time.Minute))
	}
	v := view{Title: "Messages", Nav: "messages"}
	if d.Topic != "" || d.Key != "" {
		d.Queried = true
		var err error
		d.Results, err = s.queryByKey(r, d)
		v.Errors = describeAll(err)
	}
	v.Data = d
	s.render(w, http.StatusOK, "messages", v)
}

// queryByKey runs the form's key query.
func (s *Server) queryByKey(r *http.Request, d messagesData) ([]*message.MessageExt, error) {
	if d.Topic == "" || d.Key == "" {
		return nil, errors.New("dashboard: a key query needs a topic and a key")
	}
	begin, err := parseTime(d.Begin)
	if err != nil {
		return nil, fmt.Errorf("dashboard: begin %q: %w", d.Begin, err)
	}
	end, err := parseTime(d.End)
	if err != nil {
		return nil, fmt.Errorf("dashboard: end %q: %w", d.End, err)
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	return s.admin.QueryMessageByKey(ctx, d.Topic, d.Key, begin, end, 0)
}

func (s *Server) messagePage(w http.ResponseWriter, r *http.Request, id string) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	m, err := s.admin.ViewMessageByID(ctx, id)
	if err != nil {
		s.failCluster(w, r, "Message "+id, err)
		return
	}
	d := messageData{ID: id, Msg: m}
	for _, k := range slices.Sorted(maps.Keys(m.Properties)) {
		d.Props = append(d.Props, [2]string{k, m.Properties[k]})
	}
	s.render(w, http.StatusOK, "message", view{Title: "Message " + id, Nav: "messages", Data: d})
}
