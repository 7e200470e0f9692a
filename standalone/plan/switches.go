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
// port per switch and client leaf and a gNMI port for those whose spec
// names none, and the fabric controller's metrics port.
func switchPorts(c *layout.Cluster) int {
	n := 0
	count := func(s v1alpha1.Switch) {
		n++
		if s.GNMIAddress == "" {
			n++
		}
	}
	for _, l := range c.Layers {
		for _, s := range l.Switches {
			count(s)
		}
	}
	for _, cl := range c.ClientLeaves() {
		count(cl.Switch)
	}
	if n > 0 {
		n++ // the fabric controller
	}
	return n
}

// addSwitches lays out the switch-backed layers: a software switch per
// switch (`distcache switch`, its ports at its dataAddress, its P4Runtime
// at its p4runtimeAddress), one per client leaf of their fabrics
// (`distcache switch --program client_leaf`), and one fabric controller
// that programs them all from the map file (`distcache fabric`, the
// stratum driver).
func (p *Plan) addSwitches(c *layout.Cluster, o Options, tcp *portQueue) error {
	var switches []string
	for _, sm := range c.SwitchMembers() {
		gnmi, err := p.addSwitch(c, o, tcp, sm.Switch, Process{Name: sm.Member, Kind: Switch, Layer: sm.Layer})
		if err != nil {
			return err
		}
		switches = append(switches, "--switch="+sm.Member+"="+sm.Switch.P4RuntimeAddress+",device="+strconv.FormatInt(sm.Switch.DeviceID, 10)+",gnmi="+gnmi)
	}
	for _, cl := range c.ClientLeaves() {
		gnmi, err := p.addSwitch(c, o, tcp, cl.Switch, Process{Name: cl.Name, Kind: ClientLeaf})
		if err != nil {
			return err
		}
		switches = append(switches, "--client-leaf="+cl.Name+"="+cl.Switch.P4RuntimeAddress+",data="+cl.Switch.DataAddress+
			",device="+strconv.FormatInt(cl.Switch.DeviceID, 10)+",gnmi="+gnmi)
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

// addSwitch adds the software switch pr of s, and returns its gNMI
// address: a client leaf (pr.Kind ClientLeaf) runs the client leaf
// program, any other the cache switch program; both have a read port per
// storage shard.
func (p *Plan) addSwitch(c *layout.Cluster, o Options, tcp *portQueue, s v1alpha1.Switch, pr Process) (string, error) {
	data, err := netip.ParseAddrPort(s.DataAddress)
	if err != nil {
		return "", fmt.Errorf("cannot lay out switch %s: dataAddress %q: %w", s.Name, s.DataAddress, err)
	}
	gnmi := s.GNMIAddress
	if gnmi == "" {
		gnmi = tcp.next()
	}
	pr.MetricsAddr = tcp.next()
	pr.Path, pr.Addr, pr.LogFile = o.Binary, s.DataAddress, o.log(pr.Name)
	pr.Args = []string{"switch", "--addr=" + data.Addr().String(), "--base-port=" + strconv.Itoa(int(data.Port())),
		"--read-ports=" + strconv.Itoa(c.Racks()*c.ShardsPerRack()), "--p4runtime-addr=" + s.P4RuntimeAddress, "--gnmi-addr=" + gnmi,
		"--device-id=" + strconv.FormatInt(s.DeviceID, 10), "--metrics-addr=" + pr.MetricsAddr, "--log-level=" + o.LogLevel}
	if pr.Kind == ClientLeaf {
		pr.Args = append(pr.Args, "--program=client_leaf")
	}
	p.Processes = append(p.Processes, pr)
	return gnmi, nil
}

// clientLeafArgs are the arguments of a standalone cluster's gateway for
// its cluster's client leaves: it reads through the first
// (`distcache gateway --client-leaf`), as a client in that leaf's rack.
func clientLeafArgs(c *layout.Cluster) []string {
	if cls := c.ClientLeaves(); len(cls) > 0 {
		return []string{"--client-leaf=" + cls[0].Switch.DataAddress}
	}
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
		for _, s := range append(l.Switches, l.ClientLeaves...) {
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
