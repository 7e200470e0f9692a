package driver

// Report is what Run measured. Rates are operations per second, times
// seconds; "normalized" figures are in units of one storage server's
// capacity (Report.Config.ServerCapacity).
type Report struct {
	Config ReportConfig `json:"config"`
	Modes  []ModeResult `json:"modes"`
	// LostWrites counts the written keys whose value, read back through
	// the cache or from storage, is neither the last acknowledged write's
	// nor one whose outcome is unknown.
	LostWrites int `json:"lost_writes"`
	// CheckedKeys counts the written keys read back both ways.
	CheckedKeys int `json:"checked_keys"`
	// UncheckedKeys counts the written keys not read back: a read failed,
	// or the check ran out of time.
	UncheckedKeys int         `json:"unchecked_keys,omitempty"`
	LostExamples  []LostWrite `json:"lost_examples,omitempty"`
	// PreloadErrors counts preload writes that failed.
	PreloadErrors int            `json:"preload_errors,omitempty"`
	Failure       *FailureResult `json:"failure,omitempty"`
	// Shift is the hot-set shift of DistCache's window (Config.ShiftAt).
	Shift *ShiftResult `json:"shift,omitempty"`
}

// ReportConfig is the configuration a report was measured with.
type ReportConfig struct {
	Cluster         string  `json:"cluster,omitempty"`
	MapVersion      int64   `json:"map_version"` // at the start
	Keys            uint64  `json:"keys"`
	Skew            float64 `json:"skew"`
	WriteRatio      float64 `json:"write_ratio"`
	ValueSize       int     `json:"value_size"`
	Concurrency     int     `json:"concurrency"`
	Clients         int     `json:"clients"`
	DurationSeconds float64 `json:"duration_seconds"`
	Count           uint64  `json:"count,omitempty"`
	Rate            float64 `json:"rate,omitempty"` // configured; 0: probed per mode
	Preload         int     `json:"preload"`
	WarmupSeconds   float64 `json:"warmup_seconds"`
	// ServerCapacity is the unit of the normalized figures (0: none).
	ServerCapacity float64 `json:"server_capacity"`
	// Emulated reports that capacities are emulated by rate limits
	// (paper §6.1).
	Emulated bool   `json:"emulated"`
	Seed     uint64 `json:"seed"`
	// Via is what the operations of nocache and distcache went through:
	// "gateway" (Redis clients of a gateway, Config.Via), or "" for the
	// client library's calls.
	Via string `json:"via,omitempty"`
	// ShiftAtSeconds is Config.ShiftAt (0: no hot-set shift); with it,
	// Preload keys of each key permutation were preloaded.
	ShiftAtSeconds float64 `json:"shift_at_seconds,omitempty"`
	// HotRacks is Config.HotRacks (0: hot keys on every rack).
	HotRacks int `json:"hot_racks,omitempty"`
}

// EffectiveMode is the mode of the failure, FailKill for a report without
// one (written before there were modes).
func (f *FailureResult) EffectiveMode() FailureMode {
	if f.Mode == "" {
		return FailKill
	}
	return f.Mode
}

// ModeResult is one mode's measured window.
type ModeResult struct {
	Mode Mode `json:"mode"`
	// NormalizedThroughput is AchievedRate / MaxUtilization /
	// ServerCapacity, over the part of the window before a failure
	// (omitted without capacities).
	NormalizedThroughput float64 `json:"normalized_throughput,omitempty"`
	// Predicted is the simulator's prediction, filled in by the caller.
	Predicted *float64 `json:"predicted_normalized_throughput,omitempty"`
	// MaxUtilization is u_max, and Bottleneck the member that has it.
	MaxUtilization float64 `json:"max_utilization,omitempty"`
	Bottleneck     string  `json:"bottleneck,omitempty"`
	// Imbalance is max/mean of the shards' loads, NodeImbalance of the
	// cache nodes' (omitted when the nodes did no work).
	Imbalance     float64 `json:"imbalance"`
	NodeImbalance float64 `json:"node_imbalance,omitempty"`
	// HitRatio is the share of reads served from a cached copy, per layer
	// (by name) and "all".
	HitRatio    map[string]float64 `json:"hit_ratio"`
	P50Seconds  float64            `json:"p50_seconds"`
	P99Seconds  float64            `json:"p99_seconds"`
	P999Seconds float64            `json:"p999_seconds"`
	// Ops counts the operations completed, Reads and Writes by kind.
	Ops    uint64 `json:"ops"`
	Reads  uint64 `json:"reads"`
	Writes uint64 `json:"writes"`
	// Errors counts operations that failed (ErrNotFound is an answer, not
	// an error: NotFound counts those reads), writes that could not start
	// within the operation timeout because the key's previous write was
	// still in flight included.
	Errors   uint64 `json:"errors"`
	NotFound uint64 `json:"not_found"`
	// Late counts operations issued after their time because every worker
	// was busy.
	Late         uint64  `json:"late"`
	OfferedRate  float64 `json:"offered_rate"`
	AchievedRate float64 `json:"achieved_rate"`
	// RateSource is "config" or "probe".
	RateSource string       `json:"rate_source"`
	Probe      *ProbeResult `json:"probe,omitempty"`
	Seconds    float64      `json:"seconds"` // the window's length
	Nodes      []Load       `json:"nodes,omitempty"`
	Shards     []Load       `json:"shards"`
	Timeline   []Point      `json:"timeline"`
	// Retries and Timeouts are the clients' (client.Stats) over the window.
	Retries  uint64 `json:"retries"`
	Timeouts uint64 `json:"timeouts"`
	// Hedges counts the reads that also asked a second candidate
	// (client.Stats.Hedges).
	Hedges uint64 `json:"hedges"`
	// Coherence counts the invalidations and updates the shims sent.
	Coherence uint64 `json:"coherence"`
	// HostIdle is the share of the host's CPU time that was idle over the
	// window (/proc/stat; -1 where unknown).
	HostIdle float64 `json:"host_idle"`
}

// ProbeResult is the probe that chose a mode's offered rate.
type ProbeResult struct {
	OfferedRate    float64 `json:"offered_rate"`
	AchievedRate   float64 `json:"achieved_rate"`
	MaxUtilization float64 `json:"max_utilization"`
	Seconds        float64 `json:"seconds"`
}

// Load is one member's work over a measured window.
type Load struct {
	Name           string  `json:"name"`
	Layer          string  `json:"layer,omitempty"` // cache nodes only
	Units          uint64  `json:"units"`
	UnitsPerSecond float64 `json:"units_per_second"`
	Capacity       float64 `json:"capacity,omitempty"`    // units per second; 0 unlimited
	Utilization    float64 `json:"utilization,omitempty"` // UnitsPerSecond / Capacity
}

// Point is one timeline sample: the interval ending at T.
type Point struct {
	T            float64 `json:"t_seconds"` // since the window started
	OpsPerSecond float64 `json:"ops_per_second"`
	Errors       uint64  `json:"errors"`
	Retries      uint64  `json:"retries"`
	Timeouts     uint64  `json:"timeouts"`
	// HitRatio is the share of the interval's reads served from a cached
	// copy (client.Stats), nil when the mode's clients counted no read in
	// it (or it has none: twemproxy).
	HitRatio *float64 `json:"hit_ratio,omitempty"`
}

// LostWrite is one key whose value was not an acceptable one.
type LostWrite struct {
	Key string `json:"key"`
	// Want is the last acknowledged value's header ("" if none was
	// acknowledged), Got the value read ("(not found)" if none).
	Want string `json:"want"`
	Got  string `json:"got"`
	// Unknown is the number of other values, of writes whose outcome is
	// unknown, that would have been accepted.
	Unknown int `json:"unknown,omitempty"`
	// Source is where Got was read: "cache" (routed), "storage" or
	// "twemproxy" (a key of mode twemproxy).
	Source string `json:"source"`
}

// FailureResult is the failure injected into DistCache's window. Times are
// seconds since the window started.
//
// The fields named after a kill predate the other modes and keep their
// JSON names: whatever the mode, Killed and KilledAt say whether and when
// the member failed (was killed, paused or slowed), Restarted and
// RestartedAt whether and when it recovered (was restarted, resumed or no
// longer slowed).
type FailureResult struct {
	Member string `json:"member"`
	// Mode is how the member failed (a report without one is of a kill).
	Mode FailureMode `json:"mode,omitempty"`
	// DelaySeconds is the delay of every datagram a slowed member sent
	// (FailSlow only).
	DelaySeconds float64 `json:"delay_seconds,omitempty"`
	Killed       bool    `json:"killed"`
	KilledAt     float64 `json:"killed_at"`
	Restarted    bool    `json:"restarted"`
	RestartedAt  float64 `json:"restarted_at"`
	// Throughput before the failure, while failed and after the recovery
	// (ops per second; after covers the rest of the window). Down averages
	// the dip away: Worst shows it.
	Before float64 `json:"throughput_before"`
	Down   float64 `json:"throughput_down"`
	After  float64 `json:"throughput_after"`
	// MapVersions are the partition map versions installed during the
	// window.
	MapVersions []MapVersion `json:"map_versions,omitempty"`
	// Interval is the timeline's bin in seconds. Worst is the lowest
	// completed ops/s of a bin that started after the failure and ended by
	// the recovery (or the window's end), the bin ending at WorstAt;
	// WorstRatio is Worst / Before.
	Interval   float64 `json:"interval_seconds,omitempty"`
	Worst      float64 `json:"worst_bin_ops_per_second"`
	WorstAt    float64 `json:"worst_bin_end"`
	WorstRatio float64 `json:"worst_bin_ratio"`
	// MapChangeAfter is the time from the failure to the first map
	// version installed after it (0: none was). RecoveredAfter is the time
	// from the failure to the end of the last bin before the recovery
	// whose rate was under RecoveryShare of Before (0: none was).
	MapChangeAfter float64 `json:"map_change_after"`
	RecoveredAfter float64 `json:"recovered_after"`
}

// ShiftResult is the hot-set shift of DistCache's window: from At on,
// ranks map to keys by a second permutation. Times are seconds since the
// window started. The mode's normalized throughput covers the whole
// window, both hot sets.
type ShiftResult struct {
	// ConfiguredAt is Config.ShiftAt.
	ConfiguredAt float64 `json:"configured_at"`
	// Shifted reports whether the hot set shifted: false when the window
	// ended first (by Config.Count).
	Shifted bool `json:"shifted"`
	// At is when it shifted: the issue of the first operation due at or
	// after ConfiguredAt.
	At float64 `json:"at"`
	// Seed is the second permutation's scrambler seed.
	Seed uint64 `json:"scrambler_seed"`
	// Interval is the timeline's bin in seconds.
	Interval float64 `json:"interval_seconds,omitempty"`
	// Before and After are the answered operations per second before and
	// after the shift.
	Before float64 `json:"throughput_before"`
	After  float64 `json:"throughput_after"`
	// HitRatioBefore and HitRatioAfter are the shares of reads served
	// from a cached copy before and after the shift, per layer (by name)
	// and "all", as ModeResult.HitRatio.
	HitRatioBefore map[string]float64 `json:"hit_ratio_before,omitempty"`
	HitRatioAfter  map[string]float64 `json:"hit_ratio_after,omitempty"`
}

// MapVersion is a partition map version the driver installed, and when.
type MapVersion struct {
	Version int64   `json:"version"`
	At      float64 `json:"at"`
}
