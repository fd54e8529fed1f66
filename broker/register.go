package broker

import (
	"context"

	"github.com/raftmq/raftmq/dledger"
)

// Registration with the name servers. (Being built.)

func (b *Broker) startRegistration() {}

func (b *Broker) leaderChanged(ev dledger.LeaderEvent) {}

func (b *Broker) unregisterAll(ctx context.Context) {}
