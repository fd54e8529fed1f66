package broker

// Send: SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE. (Being built.)

func (b *Broker) registerSend() {}
