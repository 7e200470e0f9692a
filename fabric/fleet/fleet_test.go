package fleet_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/fleet"
	"github.com/distcache/distcache/fabric/stratum"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/softswitch"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// TestFleetWatchesPorts: a fleet programs a software switch over
// P4Runtime and follows its ports over gNMI: all up once it reports them,
// all down once the switch closes them.
func TestFleetWatchesPorts(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	sw := switchtest.NewSwitch(t, 2)
	addr := switchtest.Serve(t, sw)
	info, err := pipelines.ProgramP4Info(softswitch.Program)
	if err != nil {
		t.Fatal(err)
	}
	r := cacheswitch.NewRunner(cacheswitch.RunnerConfig{
		Dial: func(ctx context.Context) (cacheswitch.Session, error) {
			return stratum.Dial(ctx, stratum.Config{Address: addr, DeviceID: 1, Logger: quiet})
		},
		Controller: cacheswitch.Config{Member: "m-0", Info: info, Logger: quiet}, Logger: quiet,
	})
	f := fleet.New(map[string]fleet.Member{"m-0": {Runner: r, GNMI: addr}}, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	<-r.Programmed()
	if _, _, ok := sw.Pipeline(); !ok {
		t.Fatal("the runner programmed no pipeline")
	}
	poll.Until(t, "three ports up", func() bool { total, up := f.Ports("m-0"); return total == 3 && up == 3 })
	reg := prometheus.NewRegistry()
	if err := reg.Register(f.Collector(prometheus.Labels{"switchfabric": "lab"})); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP distcache_fabric_ports_up The switch's ports gNMI reports up (0 until it reports).
# TYPE distcache_fabric_ports_up gauge
distcache_fabric_ports_up{switch_member="m-0",switchfabric="lab"} 3
# HELP distcache_fabric_switch_programmed 1 while the controller is the switch's primary and runs it with the pipeline it pushed or found.
# TYPE distcache_fabric_switch_programmed gauge
distcache_fabric_switch_programmed{switch_member="m-0",switchfabric="lab"} 1
# HELP distcache_fabric_switch_sessions_total Times the controller became the switch's primary and programmed it (pushed the pipeline or took the switch over).
# TYPE distcache_fabric_switch_sessions_total counter
distcache_fabric_switch_sessions_total{switch_member="m-0",switchfabric="lab"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "distcache_fabric_ports_up", "distcache_fabric_switch_programmed", "distcache_fabric_switch_sessions_total"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metrics lint: %v %v", problems, err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "every port down", func() bool { total, up := f.Ports("m-0"); return total == 3 && up == 0 })
}
