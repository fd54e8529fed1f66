package broker

// Clients: heartbeats, consumer groups and their connections. (Being built.)

func (b *Broker) registerClients() {}

func (b *Broker) startClients() {}
