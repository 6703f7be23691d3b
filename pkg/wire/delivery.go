package wire

// Queue modes as a sender writes them. QueueModeStack, the default, keeps
// every queued message and travels as ""; QueueModeReplace keeps only the
// newest undelivered message of a thread from one sender.
const (
	QueueModeStack   = "stack"
	QueueModeReplace = "replace"
)

// DeliveryFields names a send's delivery fields as a caller's surface
// spells them, for the errors of ParseDelivery: "--delivery",
// "--queue-mode", "--thread" on the command line; "delivery", "queueMode",
// "threadId" in the intercom tool.
type DeliveryFields struct {
	Delivery, QueueMode, Thread string
}

// ParseDelivery checks a send's delivery choices as a person or a model
// gives them (queue mode "stack" included) against each other and returns
// the delivery and queue mode a SendRequest carries. An ask (ask true) may
// not be passive. ValidateSend checks the request again where it arrives.
func ParseDelivery(delivery, queueMode, thread string, ask bool, f DeliveryFields) (string, string, error) {
	switch delivery {
	case "", DeliverySteer, DeliveryQueue, DeliveryPassive:
	default:
		return "", "", badRequest("invalid %s %q: want steer, queue or passive", f.Delivery, delivery)
	}
	if ask && delivery == DeliveryPassive {
		return "", "", badRequest("passive delivery cannot be used for an ask: it never wakes the recipient, so nobody would answer")
	}
	switch queueMode {
	case "", QueueModeStack, QueueModeReplace:
	default:
		return "", "", badRequest("invalid %s %q: want stack or replace", f.QueueMode, queueMode)
	}
	switch {
	case queueMode != "" && delivery == "":
		return "", "", badRequest("%s %s requires %s queue", f.QueueMode, queueMode, f.Delivery)
	case queueMode != "" && delivery != DeliveryQueue:
		return "", "", badRequest("%s %s requires %s queue, not %s", f.QueueMode, queueMode, f.Delivery, delivery)
	case queueMode == QueueModeReplace && thread == "":
		return "", "", badRequest("%s replace requires %s", f.QueueMode, f.Thread)
	case thread != "" && queueMode != QueueModeReplace:
		return "", "", badRequest("%s is only valid with %s replace", f.Thread, f.QueueMode)
	}
	if queueMode == QueueModeStack {
		queueMode = ""
	}
	return delivery, queueMode, nil
}
