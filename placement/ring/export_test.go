package ring

import "sort"

// Reference returns a lookup by linear scan over r's points, the definition
// the bucket index must agree with.
func Reference(r *Ring) func(h uint64) int {
	return func(h uint64) int {
		for i, p := range r.points {
			if p >= h {
				return int(r.owners[i])
			}
		}
		return int(r.owners[0])
	}
}

// BinarySearch returns a lookup by plain binary search over r's points, the
// baseline the bucket index is benchmarked against.
func BinarySearch(r *Ring) func(h uint64) int {
	return func(h uint64) int {
		i := sort.Search(len(r.points), func(i int) bool { return r.points[i] >= h })
		if i == len(r.points) {
			i = 0
		}
		return int(r.owners[i])
	}
}

// Points returns r's positions in order and the name of each one's owner.
func Points(r *Ring) ([]uint64, []string) {
	names := make([]string, len(r.owners))
	for i, o := range r.owners {
		names[i] = r.members[o]
	}
	return r.points, names
}
