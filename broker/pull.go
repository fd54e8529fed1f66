package broker

// Pull: PULL_MESSAGE with long polling. (Being built.)

func (b *Broker) registerPull() {}
