package client

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// ACLAccount is one ACL 1.0 account (RocketMQ's PlainAccessConfig):
// permissions are DENY, PUB, SUB or PUB|SUB; TopicPerms and GroupPerms
// are "name=PERM" entries.
type ACLAccount = protocol.PlainAccessConfig

// GroupACL is a broker group's ACL as one of its nodes applied it, with
// every secret masked.
type GroupACL struct {
	BrokerName string `json:"brokerName"`
	Addr       string `json:"addr"`
	Enabled    bool   `json:"enabled"`
	// Version is the raft index of the group's last ACL change.
	Version int64              `json:"version"`
	Config  protocol.ACLConfig `json:"config"`
}

// ACL returns the ACL of every broker group of cluster ("" all), as each
// group's leader (or the first node that answers) applied it. Admin
// accounts only.
func (a *Admin) ACL(ctx context.Context, cluster string) ([]GroupACL, error) {
	return a.ACLFrom(ctx, cluster, false)
}

// ACLFrom is ACL; with everyNode, every node of each group is asked (to
// see that they agree).
func (a *Admin) ACLFrom(ctx context.Context, cluster string, everyNode bool) ([]GroupACL, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []GroupACL
	for _, bd := range groups(ci, cluster, "") {
		addrs := brokerAddrs(bd)
		if !everyNode && len(addrs) > 1 {
			addrs = addrs[:1]
		}
		for _, addr := range addrs {
			g, err := a.groupACL(ctx, bd.BrokerName, addr)
			if err != nil {
				return out, err
			}
			out = append(out, g)
		}
	}
	return out, nil
}

func (a *Admin) groupACL(ctx context.Context, name, addr string) (GroupACL, error) {
	req := remoting.NewRequest(remoting.ReqGetBrokerClusterACLInfo, nil, nil)
	var cfg protocol.ACLConfig
	resp, err := a.c.call(ctx, addr, req)
	if err != nil {
		return GroupACL{}, err
	}
	if err := decodeJSON(addr, req, resp, &cfg); err != nil {
		return GroupACL{}, err
	}
	g := GroupACL{BrokerName: name, Addr: addr, Enabled: resp.ExtFields["enabled"] == "true", Config: cfg}
	var dv protocol.DataVersion
	if err := json.Unmarshal([]byte(resp.ExtFields["version"]), &dv); err == nil {
		g.Version = dv.Counter
	}
	return g, nil
}

// PutACLAccount creates or updates an account in every broker group of
// cluster ("" all). An update with no SecretKey keeps the account's
// secret. Admin accounts only.
func (a *Admin) PutACLAccount(ctx context.Context, cluster string, acc ACLAccount) ([]Placement, error) {
	if acc.AccessKey == "" {
		return nil, fmt.Errorf("%w: no access key", ErrInvalidOption)
	}
	return a.eachGroup(ctx, cluster, remoting.ReqUpdateAndCreateACLConfig, acc.Ext())
}

// DeleteACLAccount deletes an account from every broker group of cluster
// ("" all). Admin accounts only.
func (a *Admin) DeleteACLAccount(ctx context.Context, cluster, accessKey string) ([]Placement, error) {
	return a.eachGroup(ctx, cluster, remoting.ReqDeleteACLConfig, map[string]string{"accessKey": accessKey})
}

// SetACLGlobalWhiteAddrs replaces globalWhiteRemoteAddresses in every
// broker group of cluster ("" all). Admin accounts only.
func (a *Admin) SetACLGlobalWhiteAddrs(ctx context.Context, cluster string, addrs []string) ([]Placement, error) {
	return a.eachGroup(ctx, cluster, remoting.ReqUpdateGlobalWhiteAddrsConfig, map[string]string{"globalWhiteAddrs": strings.Join(addrs, ",")})
}

// eachGroup sends one write to every group of cluster.
func (a *Admin) eachGroup(ctx context.Context, cluster string, code int16, ext map[string]string) ([]Placement, error) {
	return a.eachGroupReq(ctx, cluster, func() *remoting.Command { return remoting.NewRequest(code, maps.Clone(ext), nil) })
}

// eachGroupReq sends the request mk makes to every group of cluster.
func (a *Admin) eachGroupReq(ctx context.Context, cluster string, mk func() *remoting.Command) ([]Placement, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []Placement
	for _, bd := range groups(ci, cluster, "") {
		addr, err := a.callGroup(ctx, bd, mk)
		if err != nil {
			return out, err
		}
		out = append(out, Placement{BrokerName: bd.BrokerName, Addr: addr})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no broker group in cluster %q", ErrBrokerNotFound, cluster)
	}
	return out, nil
}
