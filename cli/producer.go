package cli

import (
	"context"

	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
)

func producerCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "producer",
		Usage: "inspect producer groups",
		Subcommands: []*ucli.Command{{
			Name:  "connections",
			Usage: "the producer group's online clients: client id, address, language, version (mqadmin producerConnection)",
			Flags: []ucli.Flag{namesrvFlag(),
				&ucli.StringFlag{Name: "group", Aliases: []string{"g"}, Required: true, Usage: "producer group"},
				outputFlag()},
			Action: withAdmin(producerConnections),
		}},
	}
}

func producerConnections(ctx context.Context, c *ucli.Context, a *client.Admin) error {
	conns, err := a.ProducerConnections(ctx, c.String("group"))
	if err != nil {
		return err
	}
	rows := connectionRows(conns)
	return emit(c, rows, func() error { return printConnections(c, rows) })
}
