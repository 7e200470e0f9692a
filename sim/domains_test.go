package sim

import "testing"

// TestHostLosses checks the failure-domain measurement: without domains
// about one key in hosts has every candidate on one host, with them none.
func TestHostLosses(t *testing.T) {
	cfg := Quick(Default())
	blind, aware, err := HostLosses(cfg, Domains{Hosts: 4, Zones: 2}, 20_000)
	if err != nil {
		t.Fatal(err)
	}
	if blind.Shared < 0.15 || blind.MeanLost <= 0 || blind.MaxLost < blind.MeanLost {
		t.Fatalf("blind placement %+v: want about a quarter of the keys on one host", blind)
	}
	if aware != (HostLoss{}) {
		t.Fatalf("aware placement %+v: want no key on one host", aware)
	}
}

// TestZoneRoutings checks that zone-aware choice sends fewer reads across
// zones than zone-blind choice, over two zones where every key has a
// candidate in each.
func TestZoneRoutings(t *testing.T) {
	cfg := Quick(Default())
	cfg.Routing.Queries, cfg.Routing.Warmup = 200_000, 20_000
	rs, err := ZoneRoutings(cfg, Domains{Hosts: 8, Zones: 2}, []float64{-1, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	blind, aware := rs[0], rs[1]
	if blind.CrossZone < 0.3 || aware.CrossZone > blind.CrossZone/2 {
		t.Fatalf("cross-zone reads: blind %.3f, aware %.3f; want aware under half of blind", blind.CrossZone, aware.CrossZone)
	}
}
