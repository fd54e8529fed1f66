package dashboard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/raftmq/raftmq/client"
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
	d := groupData{Group: group, Progress: prog, Now: formatTime(time.Now())}
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
	s.render(w, http.StatusOK, "group", view{Title: "Consumer group " + group, Nav: "groups", Errors: describeAll(err), Data: d})
}

// resetOffsets resets the group's offsets of one topic: to every queue's
// earliest or latest offset, or to the first message stored at or after a
// time.
func (s *Server) resetOffsets(w http.ResponseWriter, r *http.Request) {
	group, topic, to := r.PathValue("group"), r.PostFormValue("topic"), r.PostFormValue("to")
	if topic == "" {
		s.badRequest(w, r, errors.New("dashboard: no topic named"))
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	var offsets map[client.MessageQueue]int64
	var err error
	switch to {
	case "earliest", "latest":
		offsets, err = s.resetToBound(ctx, group, topic, to == "earliest")
	case "time":
		var ts time.Time
		if ts, err = parseTime(r.PostFormValue("time")); err != nil {
			s.badRequest(w, r, fmt.Errorf("dashboard: time %q: %w", r.PostFormValue("time"), err))
			return
		}
		offsets, err = s.admin.ResetOffsetByTimestamp(ctx, group, topic, ts)
	default:
		s.badRequest(w, r, fmt.Errorf("dashboard: reset to %q: want earliest, latest or time", to))
		return
	}
	if err != nil {
		s.failCluster(w, r, "Reset offsets of "+group, err)
		return
	}
	d := resultData{Heading: fmt.Sprintf("Offsets of %s in %s reset (%s)", group, topic, to), Back: "/groups/" + group,
		Lines: []string{"Running consumers of the group keep their in-memory offsets and commit them again: restart them."},
		Table: [][]string{{"queue", "new offset"}}}
	for _, q := range slices.SortedFunc(maps.Keys(offsets), compareQueues) {
		d.Table = append(d.Table, []string{q.String(), itoa(offsets[q])})
	}
	s.render(w, http.StatusOK, "result", view{Title: "Offsets reset", Nav: "groups", Data: d})
}

// resetToBound commits every read queue's min (earliest) or max offset.
func (s *Server) resetToBound(ctx context.Context, group, topic string, earliest bool) (map[client.MessageQueue]int64, error) {
	bounds, err := s.admin.TopicQueueBounds(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[client.MessageQueue]int64{}
	for _, b := range bounds {
		off := b.Max
		if earliest {
			off = b.Min
		}
		if err := s.admin.UpdateConsumerOffset(ctx, group, b.Queue, off); err != nil {
			return out, err
		}
		out[b.Queue] = off
	}
	return out, nil
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
