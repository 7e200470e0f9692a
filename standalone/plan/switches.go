package plan

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
)

// switchPorts is the TCP ports the switch-backed layers need: a metrics
// port per switch and a gNMI port for those whose spec names none, and
// the fabric controller's metrics port.
func switchPorts(c *layout.Cluster) int {
	n := 0
	for _, l := range c.Layers {
		for _, s := range l.Switches {
			n++
			if s.GNMIAddress == "" {
				n++
			}
		}
	}
	if n > 0 {
		n++ // the fabric controller
	}
	return n
}

// addSwitches lays out the switch-backed layers: a software switch per
// switch (`distcache switch`, its ports at its dataAddress, its P4Runtime
// at its p4runtimeAddress) and one fabric controller that programs them
// all from the map file (`distcache fabric`, the stratum driver).
func (p *Plan) addSwitches(c *layout.Cluster, o Options, tcp *portQueue) error {
	shards := c.Racks() * c.ShardsPerRack()
	var switches []string
	for _, sm := range c.SwitchMembers() {
		s, member := sm.Switch, sm.Member
		data, err := netip.ParseAddrPort(s.DataAddress)
		if err != nil {
			return fmt.Errorf("cannot lay out switch %s: dataAddress %q: %w", s.Name, s.DataAddress, err)
		}
		gnmi := s.GNMIAddress
		if gnmi == "" {
			gnmi = tcp.next()
		}
		metricsAddr := tcp.next()
		p.Processes = append(p.Processes, Process{
			Name: member, Kind: Switch, Layer: sm.Layer, Path: o.Binary,
			Args: []string{"switch", "--addr=" + data.Addr().String(), "--base-port=" + strconv.Itoa(int(data.Port())),
				"--read-ports=" + strconv.Itoa(shards), "--p4runtime-addr=" + s.P4RuntimeAddress, "--gnmi-addr=" + gnmi,
				"--device-id=" + strconv.FormatInt(s.DeviceID, 10), "--metrics-addr=" + metricsAddr, "--log-level=" + o.LogLevel},
			Addr: s.DataAddress, LogFile: o.log(member), MetricsAddr: metricsAddr,
		})
		switches = append(switches, "--switch="+member+"="+s.P4RuntimeAddress+",device="+strconv.FormatInt(s.DeviceID, 10)+",gnmi="+gnmi)
	}
	if len(switches) == 0 {
		return nil
	}
	name, metricsAddr := c.Name+"-fabric", tcp.next()
	args := append([]string{"fabric", "--map=" + p.MapFile, "--metrics-addr=" + metricsAddr, "--log-level=" + o.LogLevel,
		"--map-poll=" + switchMapPoll(c, o.MapPoll).String()}, c.FabricArgs()...)
	args = append(args, switchPipelineArgs(c, o)...)
	args = append(args, switches...)
	p.Processes = append(p.Processes, Process{Name: name, Kind: Fabric, Path: o.Binary, Args: args, LogFile: o.log(name), MetricsAddr: metricsAddr})
	return nil
}

// checkSwitches refuses switch-backed layers that standalone mode cannot
// run: without their switches resolved from a SwitchFabric, or with the
// onos driver (an ONOS controller runs its switches, not this host), or
// switches without a P4Runtime address; and checks the compiled program
// of their pipelineSource (checkSwitchPipeline).
func (o *Options) checkSwitches(c *layout.Cluster) error {
	for _, l := range c.Layers {
		if l.Software() {
			continue
		}
		if len(l.Switches) == 0 {
			return fmt.Errorf("cannot run layer %s: switch-backed layers need a SwitchFabric in the cluster file: %w", l.Name, ErrUnsupported)
		}
		if l.Driver == v1alpha1.DriverONOS {
			return fmt.Errorf("cannot run layer %s: its fabric's driver is onos, and an ONOS controller runs its switches, not this host: %w", l.Name, ErrUnsupported)
		}
		for _, s := range l.Switches {
			if s.P4RuntimeAddress == "" {
				return fmt.Errorf("cannot run switch %s of layer %s: standalone mode runs a software switch per switch, programmed over P4Runtime: set its p4runtimeAddress: %w", s.Name, l.Name, ErrUnsupported)
			}
		}
	}
	return o.checkSwitchPipeline(c)
}

// switchMapPoll is how often the controller of c's switches reads its
// map: each read renews the switches' serving leases.
func switchMapPoll(c *layout.Cluster, poll time.Duration) time.Duration {
	return layout.LeaseMapPoll(layout.ServingLease(&c.Spec), poll)
}
