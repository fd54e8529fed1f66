package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
)

// adminTimeout bounds one admin command.
const adminTimeout = 30 * time.Second

func namesrvFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "namesrv", Aliases: []string{"n"}, Value: "127.0.0.1:9876", Usage: "name server address(es), comma-separated", EnvVars: []string{"NAMESRV_ADDR"}}
}

func topicFlag() *ucli.StringFlag {
	return &ucli.StringFlag{Name: "topic", Aliases: []string{"t"}, Required: true}
}

// withAdmin runs fn with an SDK admin client on --namesrv and a context
// bounded by adminTimeout, after refusing an unknown --output (before
// anything is asked or changed).
func withAdmin(fn func(ctx context.Context, c *ucli.Context, a *client.Admin) error) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		if _, err := jsonOutput(c); err != nil {
			return err
		}
		a, err := newAdmin(c)
		if err != nil {
			return err
		}
		defer a.Close()
		ctx, cancel := context.WithTimeout(c.Context, adminTimeout)
		defer cancel()
		return fn(ctx, c, a)
	}
}

// newAdmin is the SDK admin client of a command's flags.
func newAdmin(c *ucli.Context) (*client.Admin, error) {
	cr, tc, err := clientSecurity(c)
	if err != nil {
		return nil, err
	}
	return client.NewAdmin(client.WithNameServers(c.String("namesrv")), client.WithRequestTimeout(5*time.Second),
		client.WithCredentials(cr), client.WithTLS(tc))
}

func formatAddrs(m map[int64]string) string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d=%s", id, m[id]))
	}
	return strings.Join(parts, " ")
}
