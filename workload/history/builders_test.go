package history

// opOption edits an Operation built by newOp.
type opOption func(*Operation)

// newOp builds an operation of kind on key "k" by client 1 at [0, 1].
func newOp(kind Kind, opts ...opOption) Operation {
	op := Operation{Client: 1, Kind: kind, Key: "k", Return: 1}
	for _, o := range opts {
		o(&op)
	}
	return op
}

func put(value string, opts ...opOption) Operation {
	return newOp(Put, append([]opOption{func(op *Operation) { op.Value = value }}, opts...)...)
}

func del(opts ...opOption) Operation { return newOp(Delete, opts...) }

// read is a get that found value.
func read(value string, opts ...opOption) Operation {
	return newOp(Get, append([]opOption{func(op *Operation) { op.Value, op.Found = value, true }}, opts...)...)
}

// readNotFound is a get that found nothing.
func readNotFound(opts ...opOption) Operation { return newOp(Get, opts...) }

// at sets the operation's interval.
func at(call, ret int64) opOption { return func(op *Operation) { op.Call, op.Return = call, ret } }

// unknownFrom makes the operation a write of unknown outcome called at call.
func unknownFrom(call int64) opOption {
	return func(op *Operation) { op.Call, op.Return = call, Unknown }
}

func onKey(key string) opOption { return func(op *Operation) { op.Key = key } }

func byClient(c int) opOption { return func(op *Operation) { op.Client = c } }
