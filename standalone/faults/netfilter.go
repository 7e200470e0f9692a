package faults

import (
	"errors"
	"fmt"
	"math"
	"regexp"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// chainPriority runs the faults' chains before iptables' filter table
// (priority 0), whose OUTPUT chain holds the NFQUEUE rules of delays, and
// after conntrack.
var chainPriority = nftables.ChainPriorityRef(*nftables.ChainPriorityMangle - 10)

// tablePrefix starts the name of every table this package creates.
const tablePrefix = "distcache_fault_"

var validName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// action is what a rule set does with the packets it matches.
type action struct {
	// probability of dropping a matched packet (0: no drop).
	drop float64
	// mark set on matched packets (0: none).
	mark uint32
}

// Rules are the nftables rules of one fault: a table of their own in the
// namespace, removed as a whole.
type Rules struct {
	ns    *Namespace
	table *nftables.Table
	chain *nftables.Chain
	flows []Flow
}

// Drop drops the packets of flows with probability p (1: every packet, a
// partition) until the returned rules are removed. name identifies the
// fault (lower-case letters, digits and _).
func Drop(ns *Namespace, name string, p float64, flows ...Flow) (*Rules, error) {
	if p <= 0 || p > 1 || math.IsNaN(p) {
		return nil, fmt.Errorf("cannot drop packets of %s: probability %v not in (0, 1]", name, p)
	}
	return install(ns, name, action{drop: p}, flows)
}

// mark sets mark on the packets of flows.
func mark(ns *Namespace, name string, m uint32, flows ...Flow) (*Rules, error) {
	return install(ns, name, action{mark: m}, flows)
}

func install(ns *Namespace, name string, act action, flows []Flow) (*Rules, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("cannot install fault %q: a name is 1 to 32 of a-z, 0-9 and _", name)
	}
	if len(flows) == 0 {
		return nil, fmt.Errorf("cannot install fault %s: no flows", name)
	}
	c, closeConn, err := conn(ns)
	if err != nil {
		return nil, err
	}
	defer closeConn()
	table := &nftables.Table{Name: tablePrefix + name, Family: nftables.TableFamilyINet}
	accept := nftables.ChainPolicyAccept
	r := &Rules{ns: ns, table: table, flows: flows}
	c.AddTable(table)
	r.chain = c.AddChain(&nftables.Chain{
		Name: "output", Table: table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: chainPriority, Policy: &accept,
	})
	for _, f := range flows {
		exprs, err := matchFlow(c, table, f)
		if err != nil {
			return nil, fmt.Errorf("cannot install fault %s: %w", name, err)
		}
		exprs = append(exprs, actionExprs(act)...)
		c.AddRule(&nftables.Rule{Table: table, Chain: r.chain, Exprs: exprs})
	}
	if err := c.Flush(); err != nil {
		return nil, fmt.Errorf("cannot install fault %s in %s: %w", name, ns, err)
	}
	return r, nil
}

// matchFlow is the expressions that match f's packets.
func matchFlow(c *nftables.Conn, t *nftables.Table, f Flow) ([]expr.Any, error) {
	if f.Proto != UDP && f.Proto != TCP {
		return nil, fmt.Errorf("flow %s: only udp and tcp", f)
	}
	exprs := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{byte(f.Proto)}},
	}
	for _, side := range []struct {
		ports  Ports
		offset uint32
	}{{f.Src, 0}, {f.Dst, 2}} {
		if side.ports.any() {
			continue
		}
		exprs = append(exprs, &expr.Payload{
			DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: side.offset, Len: 2,
		})
		if len(side.ports.List) == 1 {
			op := expr.CmpOpEq
			if side.ports.Except {
				op = expr.CmpOpNeq
			}
			exprs = append(exprs, &expr.Cmp{Op: op, Register: 1, Data: binaryutil.BigEndian.PutUint16(side.ports.List[0])})
			continue
		}
		set := &nftables.Set{Table: t, Anonymous: true, Constant: true, KeyType: nftables.TypeInetService}
		elems := make([]nftables.SetElement, len(side.ports.List))
		for i, p := range side.ports.List {
			elems[i] = nftables.SetElement{Key: binaryutil.BigEndian.PutUint16(p)}
		}
		if err := c.AddSet(set, elems); err != nil {
			return nil, fmt.Errorf("flow %s: cannot add a port set: %w", f, err)
		}
		exprs = append(exprs, &expr.Lookup{
			SourceRegister: 1, SetName: set.Name, SetID: set.ID, Invert: side.ports.Except,
		})
	}
	return exprs, nil
}

// actionExprs is act as expressions: a random draw for a probabilistic
// drop, then a counter (of the packets acted on), then the verdict or the
// mark.
func actionExprs(act action) []expr.Any {
	var exprs []expr.Any
	if act.drop > 0 && act.drop < 1 {
		// numgen random mod 2^16 < p × 2^16. The kernel compares registers
		// as bytes, so the number is turned to network byte order first,
		// as nft does for relational comparisons of host-order values.
		const modulus = 1 << 16
		exprs = append(exprs,
			&expr.Numgen{Register: 1, Modulus: modulus, Type: unix.NFT_NG_RANDOM},
			&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
			&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: binaryutil.BigEndian.PutUint32(uint32(act.drop * modulus))},
		)
	}
	exprs = append(exprs, &expr.Counter{})
	if act.drop > 0 {
		return append(exprs, &expr.Verdict{Kind: expr.VerdictDrop})
	}
	return append(exprs,
		&expr.Immediate{Register: 1, Data: binaryutil.NativeEndian.PutUint32(act.mark)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1},
	)
}

// Packets is how many packets the rules dropped or marked so far.
func (r *Rules) Packets() (uint64, error) {
	c, closeConn, err := conn(r.ns)
	if err != nil {
		return 0, err
	}
	defer closeConn()
	rules, err := c.GetRules(r.table, r.chain)
	if err != nil {
		return 0, fmt.Errorf("cannot read the rules of %s: %w", r.table.Name, err)
	}
	var n uint64
	for _, rule := range rules {
		for _, e := range rule.Exprs {
			if ctr, ok := e.(*expr.Counter); ok {
				n += ctr.Packets
			}
		}
	}
	return n, nil
}

// Flows are the flows the rules match.
func (r *Rules) Flows() []Flow { return r.flows }

// Remove deletes the rules; it is a no-op once the namespace is gone.
func (r *Rules) Remove() error {
	if !r.ns.exists() {
		return nil
	}
	c, closeConn, err := conn(r.ns)
	if err != nil {
		return err
	}
	defer closeConn()
	c.DelTable(r.table)
	if err := c.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("cannot remove fault %s from %s: %w", r.table.Name, r.ns, err)
	}
	return nil
}

// Tables lists the fault tables in ns (for checks that every fault was
// removed).
func Tables(ns *Namespace) ([]string, error) {
	c, closeConn, err := conn(ns)
	if err != nil {
		return nil, err
	}
	defer closeConn()
	ts, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, fmt.Errorf("cannot list the nftables tables of %s: %w", ns, err)
	}
	var names []string
	for _, t := range ts {
		if len(t.Name) > len(tablePrefix) && t.Name[:len(tablePrefix)] == tablePrefix {
			names = append(names, t.Name)
		}
	}
	return names, nil
}

// conn opens an nftables connection in ns; closeConn releases it.
func conn(ns *Namespace) (c *nftables.Conn, closeConn func(), err error) {
	f, err := ns.open()
	if err != nil {
		return nil, nil, err
	}
	c, err = nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("cannot open nftables in %s: %w", ns, err)
	}
	return c, func() { _ = f.Close() }, nil
}
