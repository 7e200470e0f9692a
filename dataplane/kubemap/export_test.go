package kubemap

// SetResourceVersion makes the next watch start from rv, as one that has
// been down while the API server compacted its history would.
func (s *Source) SetResourceVersion(rv string) { s.seen(rv) }
