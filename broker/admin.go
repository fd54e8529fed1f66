package broker

// Admin: topic and subscription-group management, message queries and
// runtime info. (Being built.)

func (b *Broker) registerAdmin() {}
