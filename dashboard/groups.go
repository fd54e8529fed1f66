package dashboard

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/remoting"
)

// groupsData is the consumer groups page.
type groupsData struct {
	Groups []string
}

func (s *Server) groupsPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	names, err := s.admin.ConsumerGroups(ctx)
	if err != nil {
		s.failCluster(w, r, "Consumer groups", err)
		return
	}
	s.render(w, http.StatusOK, "groups", view{Title: "Consumer groups", Nav: "groups", Data: groupsData{Groups: names}})
}

// groupData is a consumer group page.
type groupData struct {
	Group    string
	Progress []client.QueueProgress
	TotalLag int64
	// Topics are the topics of Progress, for the reset form; Laggiest,
	// the one with the most lag, is its default.
	Topics   []string
	Laggiest string
	// Now is the reset form's default time.
	Now string
	// Conns are the group's online consumers (GET_CONSUMER_CONNECTION_LIST);
	// nil when none is online.
	Conns *client.ConsumerConnections
}

func (s *Server) groupPage(w http.ResponseWriter, r *http.Request) {
	group := r.PathValue("group")
	ctx, cancel := s.ctx(r)
	defer cancel()
	var topics []string
	if t := r.URL.Query().Get("topic"); t != "" {
		topics = []string{t}
	}
	prog, err := s.admin.ConsumerGroupProgress(ctx, group, topics...)
	conns, cerr := s.admin.ConsumerConnections(ctx, group)
	if isNotOnline(cerr) {
		conns, cerr = nil, nil
	}
	d := groupData{Group: group, Progress: prog, Now: formatTime(time.Now()), Conns: conns}
	lag := map[string]int64{}
	for _, p := range prog {
		d.TotalLag += p.Lag
		lag[p.Queue.Topic] += p.Lag
	}
	d.Topics = slices.Sorted(maps.Keys(lag))
	for _, t := range d.Topics {
		if d.Laggiest == "" || lag[t] > lag[d.Laggiest] {
			d.Laggiest = t
		}
	}
	s.render(w, http.StatusOK, "group", view{Title: "Consumer group " + group, Nav: "groups", Errors: describeAll(err, cerr), Data: d})
}

// isNotOnline reports whether err is CONSUMER_NOT_ONLINE: no client of the
// group is connected (not a failure for the page).
func isNotOnline(err error) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Code == remoting.ResConsumerNotOnline
}

// resetOffsets resets the group's offsets of one topic through the broker
// (INVOKE_BROKER_TO_RESET_OFFSET, so running consumers restart at them):
// to every queue's earliest or latest offset, or to the first message
// stored at or after a time.
func (s *Server) resetOffsets(w http.ResponseWriter, r *http.Request) {
	group, topic, to := r.PathValue("group"), r.PostFormValue("topic"), r.PostFormValue("to")
	if topic == "" {
		s.badRequest(w, r, errors.New("dashboard: no topic named"))
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	req := client.OffsetReset{Group: group, Topic: topic}
	switch to {
	case "earliest":
	case "latest":
		req.Latest = true
	case "time":
		ts, err := parseTime(r.PostFormValue("time"))
		if err != nil {
			s.badRequest(w, r, fmt.Errorf("dashboard: time %q: %w", r.PostFormValue("time"), err))
			return
		}
		req.Timestamp = ts
		if ts.IsZero() || ts.UnixMilli() <= 0 {
			req.Timestamp = time.UnixMilli(1) // the zero Time means earliest; this is the same
		}
	default:
		s.badRequest(w, r, fmt.Errorf("dashboard: reset to %q: want earliest, latest or time", to))
		return
	}
	offsets, err := s.admin.ResetOffset(ctx, req)
	if err != nil {
		s.failCluster(w, r, "Reset offsets of "+group, err)
		return
	}
	d := resultData{Heading: fmt.Sprintf("Offsets of %s in %s reset (%s)", group, topic, to), Back: "/groups/" + group,
		Lines: []string{"Running consumers of the group were told and restart at the new offsets."},
		Table: [][]string{{"queue", "new offset"}}}
	slices.SortFunc(offsets, func(x, y client.QueueOffset) int { return compareQueues(x.Queue, y.Queue) })
	for _, q := range offsets {
		d.Table = append(d.Table, []string{q.Queue.String(), itoa(q.Offset)})
	}
	s.render(w, http.StatusOK, "result", view{Title: "Offsets reset", Nav: "groups", Data: d})
}

func compareQueues(x, y client.MessageQueue) int {
	if x.BrokerName != y.BrokerName {
		if x.BrokerName < y.BrokerName {
			return -1
		}
		return 1
	}
	return int(x.QueueID - y.QueueID)
}
