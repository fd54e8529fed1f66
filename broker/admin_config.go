package broker

// Admin: broker config. GET_BROKER_CONFIG (26) answers the node's
// settings as Java properties text (key=value lines) with the DataVersion
// in ext version, as RocketMQ's getBrokerConfig. UPDATE_BROKER_CONFIG (25)
// takes properties text; of RocketMQ's keys brokerPermission,
// autoCreateTopicEnable, defaultTopicQueueNums, longPollingEnable,
// transactionTimeOut, transactionCheckInterval, transactionCheckMax,
// slaveReadEnable and accessMessageInMemoryMaxRatio (and raftmq's
// accessMessageInMemoryMaxBytes) may change at run time (settings.go),
// and they are the group's (replicated
// through raft: they hold on every node, across restarts and snapshots).
// Other keys, and values out of range, are refused by name, the whole
// update with them.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// configAdmin serves the broker-config codes.
type configAdmin struct {
	rep      *replica
	meta     *meta.State
	tables   *tables
	cfg      *Config
	settings *runtimeSettings
}

func (a *configAdmin) register(m mux) {
	m.HandleFunc(remoting.ReqGetBrokerConfig, a.get)
	m.HandleFunc(remoting.ReqUpdateBrokerConfig, a.rep.leaderOnly(a.update))
}

// properties is this node's configuration under RocketMQ's names.
func (a *configAdmin) properties() map[string]string {
	c := a.cfg
	live := a.settings.get()
	return map[string]string{
		"brokerClusterName":             c.Cluster,
		"brokerName":                    c.BrokerName,
		"brokerIP1":                     a.rep.self.RemotingAddr,
		"namesrvAddr":                   strings.Join(c.NameServers, ";"),
		"brokerPermission":              strconv.Itoa(int(a.meta.BrokerPermission())),
		"autoCreateTopicEnable":         strconv.FormatBool(live.autoCreateTopic),
		"defaultTopicQueueNums":         strconv.Itoa(int(live.defaultQueueNums)),
		"maxMessageSize":                strconv.Itoa(c.MaxMessageSize),
		"flushDiskType":                 c.Store.CommitLog.FlushMode.String(),
		"messageDelayLevel":             c.MessageDelayLevel,
		"transactionTimeOut":            strconv.FormatInt(live.txnTimeout.Milliseconds(), 10),
		"transactionCheckInterval":      strconv.FormatInt(live.txnCheckInterval.Milliseconds(), 10),
		"transactionCheckMax":           strconv.Itoa(int(live.txnCheckMax)),
		"enablePropertyFilter":          strconv.FormatBool(c.EnablePropertyFilter),
		"storeReplyMessageEnable":       strconv.FormatBool(c.StoreReplyMessage),
		"traceTopicEnable":              strconv.FormatBool(c.TraceTopicEnable),
		"longPollingEnable":             strconv.FormatBool(live.longPolling),
		"slaveReadEnable":               strconv.FormatBool(live.slaveRead),
		"accessMessageInMemoryMaxRatio": strconv.Itoa(live.memRatio),
		"accessMessageInMemoryMaxBytes": strconv.FormatInt(live.memBytes, 10),
		"storePathRootDir":              c.DataDir,
		"aclEnable":                     strconv.FormatBool(a.meta.ACL().Enabled || c.ACL != nil),
	}
}

func (a *configAdmin) get(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	props := a.properties()
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&sb, "%s=%s\n", k, props[k])
	}
	resp := okResponse(req)
	resp.Body = []byte(sb.String())
	dv, _ := json.Marshal(a.tables.dataVersion())
	resp.ExtFields["version"] = string(dv)
	return resp
}

// parseProperties reads Java properties text: key=value (or key:value)
// lines, # and ! comments.
func parseProperties(b []byte) (map[string]string, error) {
	out := map[string]string{}
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("line %d %q is not key=value", n+1, line)
		}
		out[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return out, nil
}

func (a *configAdmin) update(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	props, err := parseProperties(req.Body)
	if err != nil {
		return errResponse(req, remoting.ResSystemError, "UPDATE_BROKER_CONFIG body: %v", err)
	}
	var cmds []dledger.Command
	if v, ok := props["brokerPermission"]; ok {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > protocol.PermReadWrite {
			return errResponse(req, remoting.ResSystemError, "brokerPermission %q is not a permission (6 read and write, 4 read only, 2 write only); nothing was changed", v)
		}
		cmds = append(cmds, &meta.BrokerPermissionCommand{Perm: int32(p)})
		delete(props, "brokerPermission")
	}
	if err := checkRuntimeSettings(props); err != nil {
		return errResponse(req, remoting.ResSystemError, "%v", err)
	}
	if len(props) > 0 {
		cmds = append([]dledger.Command{&meta.BrokerSettingsCommand{Settings: props}}, cmds...)
	}
	for _, c := range cmds {
		if _, err := a.rep.propose(ctx, c); err != nil {
			return a.rep.proposeFailure(ctx, req, err)
		}
	}
	return okResponse(req)
}
