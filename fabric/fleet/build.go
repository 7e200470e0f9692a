package fleet

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/netip"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/clientleaf"
	"github.com/distcache/distcache/fabric/pipeline"
	"github.com/distcache/distcache/fabric/stratum"
)

// Switch is one switch of a fabric as its controller reaches it.
type Switch struct {
	// Member is the switch's member name in the partition map.
	Member string
	// P4Runtime is the switch's P4Runtime endpoint (host:port).
	P4Runtime string
	// DeviceID is the switch's P4Runtime device id.
	DeviceID uint64
	// GNMI, when set, is the switch's gNMI endpoint: its ports are
	// watched.
	GNMI string
	// ClientLeaf, when valid, makes the switch a client leaf at this
	// data address (its read port of shard g is the port + 1 + g): it
	// runs the client leaf program (Config.ClientLeafInfo), programmed
	// from every map read by a clientleaf.Runner. Member is then only its
	// name in the fleet: a client leaf is not in the partition map.
	ClientLeaf netip.AddrPort
}

// Config is what the switches of a fleet share.
type Config struct {
	// Pipeline is what every session pushes: its P4Info (the
	// controller's), device config and cookie.
	Pipeline *pipeline.Pipeline
	// Controller programs each switch; Build sets its Member, Info and
	// Logger for each.
	Controller cacheswitch.Config
	// ClientLeafInfo is the P4Info of the client leaf program, for the
	// client leaves (Switch.ClientLeaf).
	ClientLeafInfo *p4configv1.P4Info
	// Interval is the hot-key insertion interval.
	Interval time.Duration
	// ElectionID is the low 64 bits of the controller's P4Runtime election
	// id: unique among the controllers of the fabric's switches (package
	// stratum).
	ElectionID uint64
	// Leader starts the fleet as the leader of the controllers that run
	// it (Fleet.SetLeader).
	Leader bool
	// AlwaysPush pushes the pipeline at every session, even to a switch
	// that runs it (cacheswitch.RunnerConfig.AlwaysPush).
	AlwaysPush bool
	// TLS, when set, secures the P4Runtime and gNMI connections;
	// plaintext otherwise.
	TLS *tls.Config
	// OnChange, when set, is called with a switch's runner state
	// whenever it changes.
	OnChange func(cacheswitch.State)
	Logger   *slog.Logger
}

// Build returns the fleet of switches, each programmed over a P4Runtime
// session (package stratum) by a cacheswitch.Runner — as the switch's
// primary, or as a backup while another controller is — or by a
// clientleaf.Runner for a client leaf (the leader's fleet only), and the
// runners in the order of switches.
func Build(switches []Switch, cfg Config) (*Fleet, []Runner) {
	members := map[string]Member{}
	runners := make([]Runner, 0, len(switches))
	for _, s := range switches {
		cc := cfg.Controller
		cc.Member, cc.Info, cc.Logger = s.Member, cfg.Pipeline.Info, cfg.Logger
		dial := stratum.Config{Address: s.P4Runtime, DeviceID: s.DeviceID, ElectionID: cfg.ElectionID, TLS: cfg.TLS, Logger: cfg.Logger}
		if s.ClientLeaf.IsValid() {
			leaf := newClientLeaf(s, dial, cfg)
			runners = append(runners, leaf)
			members[s.Member] = Member{Runner: leaf, GNMI: s.GNMI, GNMITLS: cfg.TLS}
			continue
		}
		runner := cacheswitch.NewRunner(cacheswitch.RunnerConfig{
			Dial: func(ctx context.Context) (cacheswitch.Session, error) {
				return stratum.Open(ctx, dial)
			},
			Controller: cc, DeviceConfig: cfg.Pipeline.DeviceConfig, Cookie: cfg.Pipeline.Cookie,
			Interval: cfg.Interval, Leader: cfg.Leader, AlwaysPush: cfg.AlwaysPush, OnChange: cfg.OnChange, Logger: cfg.Logger,
		})
		runners = append(runners, runner)
		members[s.Member] = Member{Runner: runner, GNMI: s.GNMI, GNMITLS: cfg.TLS}
	}
	return New(members, cfg.Logger), runners
}

// newClientLeaf is the runner of client leaf s, dialed with dial.
func newClientLeaf(s Switch, dial stratum.Config, cfg Config) *clientleaf.Runner {
	return clientleaf.NewRunner(clientleaf.RunnerConfig{
		Name: s.Member,
		Dial: func(ctx context.Context) (clientleaf.Session, error) {
			return stratum.Dial(ctx, dial)
		},
		Controller: clientleaf.Config{Addr: s.ClientLeaf, Info: cfg.ClientLeafInfo, Logger: cfg.Logger}, Leader: cfg.Leader,
		OnChange: cfg.OnChange, Logger: cfg.Logger,
	})
}

// Follow hands every read of w to the fleet, which renews the switches'
// leases from the read's start as a cache node does, and reads w every
// poll until ctx ends.
func (f *Fleet) Follow(ctx context.Context, w *mapwatch.Watcher, poll time.Duration) {
	w.OnRead(func(at time.Time, _ int64) { f.Renew(w.Current(), at) })
	w.Run(ctx, poll)
}
