package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// SetWritable takes a broker group's write permission away (writable
// false: the start of a drain) or gives it back. The group's
// brokerPermission is changed through raft (UPDATE_BROKER_CONFIG; the
// group refuses sends and registers its topics read-only, on every node
// and across restarts), and every name server's routes are changed at once
// (WIPE_WRITE_PERM_OF_BROKER / ADD_WRITE_PERM_OF_BROKER), so producers
// move to the other groups at their next route refresh or failed send.
func (a *Admin) SetWritable(ctx context.Context, brokerName string, writable bool) error {
	perm := protocol.PermRead
	code := remoting.ReqWipeWritePermOfBroker
	if writable {
		perm, code = protocol.PermReadWrite, remoting.ReqAddWritePermOfBroker
	}
	if err := a.UpdateBrokerConfig(ctx, brokerName, map[string]string{"brokerPermission": strconv.Itoa(perm)}); err != nil {
		return err
	}
	var errs []error
	for _, ns := range a.c.cfg.nameServers {
		if _, err := a.c.call(ctx, ns, remoting.NewRequest(code, map[string]string{"brokerName": brokerName}, nil)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// BrokerConfig returns GET_BROKER_CONFIG of the node at addr: its settings
// under RocketMQ's names.
func (a *Admin) BrokerConfig(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := a.c.call(ctx, addr, remoting.NewRequest(remoting.ReqGetBrokerConfig, nil, nil))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(resp.Body), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out, nil
}

// UpdateBrokerConfig changes a broker group's settings through raft
// (UPDATE_BROKER_CONFIG, sent to the leader or forwarded to it), as
// mqadmin updateBrokerConfig. Only the settings that may change at run
// time are accepted (brokerPermission, autoCreateTopicEnable,
// defaultTopicQueueNums, longPollingEnable, transactionTimeOut,
// transactionCheckInterval, transactionCheckMax); the broker refuses any
// other, or a value out of range, by name and then changes nothing.
func (a *Admin) UpdateBrokerConfig(ctx context.Context, brokerName string, props map[string]string) error {
	if len(props) == 0 {
		return fmt.Errorf("%w: no setting to change", ErrInvalidOption)
	}
	bd, err := a.group(ctx, brokerName)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if k == "" || strings.ContainsAny(k, "=\n") || strings.Contains(props[k], "\n") {
			return fmt.Errorf("%w: setting %q=%q", ErrInvalidOption, k, props[k])
		}
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	body := []byte(b.String())
	_, err = a.callGroup(ctx, bd, func() *remoting.Command {
		return remoting.NewRequest(remoting.ReqUpdateBrokerConfig, nil, body)
	})
	return err
}

// DrainProgress is what a broker group still holds for its consumers.
type DrainProgress struct {
	// Queues is every (consumer group, queue) of the broker group with a
	// committed offset; Lag sums their lags.
	Queues []GroupQueueProgress
	Lag    int64
}

// GroupQueueProgress is one consumer group's progress in one queue.
type GroupQueueProgress struct {
	Group string
	QueueProgress
}

// DrainStatus reports the consumer lag left on brokerName's queues: for
// every consumer group with offsets committed there
// (GET_ALL_CONSUMER_OFFSET), each of its queues on the group.
func (a *Admin) DrainStatus(ctx context.Context, brokerName string) (DrainProgress, error) {
	bd, err := a.group(ctx, brokerName)
	if err != nil {
		return DrainProgress{}, err
	}
	var w protocol.ConsumerOffsetWrapper
	resp, addr, err := a.callGroupResp(ctx, bd, func() *remoting.Command {
		return remoting.NewRequest(remoting.ReqGetAllConsumerOffset, nil, nil)
	})
	if err != nil {
		return DrainProgress{}, err
	}
	if err := decodeJSON(addr, &remoting.Command{Code: remoting.ReqGetAllConsumerOffset}, resp, &w); err != nil {
		return DrainProgress{}, err
	}
	var out DrainProgress
	for _, key := range slices.Sorted(maps.Keys(w.OffsetTable)) {
		topic, group, ok := strings.Cut(key, "@")
		if !ok {
			continue
		}
		ps, err := a.ConsumerGroupProgress(ctx, group, topic)
		if errors.Is(err, ErrNoRoute) {
			continue
		}
		if err != nil {
			return out, err
		}
		for _, p := range ps {
			if p.Queue.BrokerName == brokerName {
				out.Queues = append(out.Queues, GroupQueueProgress{Group: group, QueueProgress: p})
				out.Lag += p.Lag
			}
		}
	}
	return out, nil
}

// Drain wipes brokerName's write permission and waits, polling every
// interval, until its consumers have consumed everything it holds; each
// poll's progress goes to progress (nil: none). Then the group's nodes can
// be stopped: they unregister and leave the routes. Messages still
// waiting for a delay level or a timer in the group are not counted.
func (a *Admin) Drain(ctx context.Context, brokerName string, interval time.Duration, progress func(DrainProgress)) error {
	if err := a.SetWritable(ctx, brokerName, false); err != nil {
		return err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		st, err := a.DrainStatus(ctx, brokerName)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(st)
		}
		if st.Lag == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("client: draining %s: %d messages left: %w", brokerName, st.Lag, ctx.Err())
		case <-t.C:
		}
	}
}
