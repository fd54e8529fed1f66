package broker

// Offsets: consumer offsets and queue offset queries. (Being built.)

func (b *Broker) registerOffsets() {}
