package metrics

// MissRatioCurve is what GET /mrc answers, as JSON: a cache node's LRU
// miss-ratio curve over its last complete window of reads (or over the
// current one until one has ended), estimated online with SHARDS (package
// hotkey/mrc), and the hits the node measured in the same window. A control
// loop reads it to size cache layers as D3N does (Kaynar et al.): the curve
// predicts the miss ratio the node's reads would have at other capacities,
// and its value at the node's own capacity, set against the measured hits,
// shows how far the node's admission policy is from LRU.
type MissRatioCurve struct {
	// Window is the length of the window the curve covers, in seconds.
	Window float64 `json:"window"`
	// Requests is the reads the curve covers: the GETs of keys the node
	// serves (hits and misses), in the window.
	Requests uint64 `json:"requests"`
	// Hits is the GETs the node served from its cache in the same window.
	Hits uint64 `json:"hits"`
	// Entries is the node's capacity in entries (0: unbounded).
	Entries int `json:"entries"`
	// Points is the curve at increasing cache sizes, spread log-uniformly
	// from 1 entry to a few times Entries; Entries itself is one of them.
	Points []CurvePoint `json:"points"`
}

// CurvePoint is one point of a MissRatioCurve.
type CurvePoint struct {
	// Entries is a cache size in entries.
	Entries int `json:"entries"`
	// MissRatio is the estimated miss ratio of an LRU cache of that size,
	// in [0, 1].
	MissRatio float64 `json:"missRatio"`
}

// MissRatioCurvePath is where the server answers MissRatioCurve
// (WithMissRatioCurve).
const MissRatioCurvePath = "/mrc"
