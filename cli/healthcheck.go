package cli

import (
	"context"
	"fmt"
	"net/http"
	"time"

	ucli "github.com/urfave/cli/v2"
)

// healthcheckCommand GETs a broker's /healthz: the container health check
// of a FROM-scratch image, which has no shell or curl.
func healthcheckCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "healthcheck",
		Usage: "exit 0 if the broker's /healthz at --http answers 200 (container health checks)",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "http", Value: "127.0.0.1:10980", Usage: "the broker's --http address"},
			&ucli.DurationFlag{Name: "timeout", Value: 3 * time.Second},
		},
		Action: func(c *ucli.Context) error {
			ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.String("http")+"/healthz", nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s/healthz answered %s", c.String("http"), resp.Status)
			}
			return nil
		},
	}
}
