package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// topicRow is one topic of the topics page.
type topicRow struct {
	Name string
	// Groups, ReadQueues and WriteQueues sum the topic's route.
	Groups, ReadQueues, WriteQueues int
	Err                             *errView
}

// topicsData is the topics page.
type topicsData struct {
	Topics []topicRow
	// All: system, %RETRY% and %DLQ% topics are listed too.
	All bool
}

func (s *Server) topicsPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	names, err := s.admin.ListTopics(ctx)
	if err != nil {
		s.failCluster(w, r, "Topics", err)
		return
	}
	d := topicsData{All: r.URL.Query().Get("all") == "1"}
	for _, n := range sortedCopy(names) {
		if !d.All && protocol.IsSystemTopic(n) {
			continue
		}
		row := topicRow{Name: n}
		if rd, err := s.admin.Route(ctx, n); err != nil {
			ev := describe(err)
			row.Err = &ev
		} else {
			row.Groups = len(rd.QueueDatas)
			for _, q := range rd.QueueDatas {
				row.ReadQueues += int(q.ReadQueueNums)
				row.WriteQueues += int(q.WriteQueueNums)
			}
		}
		d.Topics = append(d.Topics, row)
	}
	s.render(w, http.StatusOK, "topics", view{Title: "Topics", Nav: "topics", Data: d})
}

// queueRow is one queue of a topic page.
type queueRow struct {
	client.QueueBounds
	// Stored is Max - Min.
	Stored int64
}

// topicData is a topic page.
type topicData struct {
	Topic  string
	Route  *protocol.TopicRouteData
	Queues []queueRow
	// Messages sums Stored.
	Messages int64
	CanSend  bool
}

func (s *Server) topicPage(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	ctx, cancel := s.ctx(r)
	defer cancel()
	rd, err := s.admin.Route(ctx, topic)
	if err != nil {
		s.failCluster(w, r, "Topic "+topic, err)
		return
	}
	d := topicData{Topic: topic, Route: rd, CanSend: s.producer != nil}
	bounds, err := s.admin.TopicQueueBounds(ctx, topic)
	for _, b := range bounds {
		d.Queues = append(d.Queues, queueRow{QueueBounds: b, Stored: b.Max - b.Min})
		d.Messages += b.Max - b.Min
	}
	s.render(w, http.StatusOK, "topic", view{Title: "Topic " + topic, Nav: "topics", Errors: describeAll(err), Data: d})
}

// sendMessage sends the form's message with the dashboard's producer.
func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	if s.producer == nil {
		s.fail(w, r, http.StatusNotFound, "Send", errors.New("dashboard: sending is off (no producer)"))
		return
	}
	body := r.PostFormValue("body")
	if body == "" {
		s.badRequest(w, r, errors.New("dashboard: the message body is empty"))
		return
	}
	m := &message.Message{Topic: topic, Body: []byte(body)}
	if tags := strings.TrimSpace(r.PostFormValue("tags")); tags != "" {
		m.SetTags(tags)
	}
	if keys := strings.Fields(r.PostFormValue("keys")); len(keys) > 0 {
		m.SetKeys(keys)
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	res, err := s.producer.Send(ctx, m)
	if err != nil {
		s.failCluster(w, r, "Send to "+topic, err)
		return
	}
	d := resultData{Heading: "Sent to " + topic + ": " + res.Status.String(), Back: "/topics/" + topic,
		Table: [][]string{{"field", "value"},
			{"status", res.Status.String()}, {"msgId", res.MsgID}, {"offsetMsgId", res.OffsetMsgID},
			{"queue", res.Queue.String()}, {"queue offset", itoa(res.QueueOffset)}}}
	d.Link, d.LinkText = "/messages?"+url.Values{"id": {res.OffsetMsgID}}.Encode(), "view the stored message"
	s.render(w, http.StatusOK, "result", view{Title: "Send result", Nav: "topics", Data: d})
}
