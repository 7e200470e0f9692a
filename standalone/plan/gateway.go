package plan

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/distcache/distcache/layout"
)

// addGateway adds the Redis-compatible gateway, on two ports of tcp: its
// Redis and its metrics address. With spec.gateway.clusterFace it answers
// Redis Cluster clients, announcing its loopback Redis address, alone.
func (p *Plan) addGateway(c *layout.Cluster, o Options, tcp *portQueue) {
	name, redisAddr, metricsAddr := c.Name+"-gateway", tcp.next(), tcp.next()
	args := append([]string{"gateway", "--redis-addr=" + redisAddr}, layout.DataPlaneArgs(&c.Spec)...)
	args = append(args, clientLeafArgs(c)...)
	if o.GatewayUsersDir != "" {
		args = append(args, "--users-dir="+o.GatewayUsersDir)
	}
	if o.GatewayTLSCert != "" {
		args = append(args, "--tls-cert="+o.GatewayTLSCert, "--tls-key="+o.GatewayTLSKey)
	}
	if c.Spec.Gateway.ClusterFace {
		args = append(args, "--cluster-face")
	}
	if dp := c.Spec.DataPlane; dp != nil && dp.DirectReads {
		args = append(args, shimLoginArgs(p.RedisLogin)...) // it reaches the shards' Redis as their shims do
	}
	p.Processes = append(p.Processes, Process{
		Name: name, Kind: Gateway, Path: o.Binary,
		Args:    o.roleArgs(args, metricsAddr, p, o.MapPoll, 0),
		Addr:    redisAddr,
		LogFile: o.log(name), MetricsAddr: metricsAddr,
		Auth: o.GatewayUsersDir != "", TLS: o.GatewayTLSCert != "",
	})
}

// runsGateway says whether the plan runs a gateway: not with
// Options.NoGateway nor with spec.gateway.replicas 0, and one for any other
// count (a host needs no second gateway in front of the same processes).
func runsGateway(c *layout.Cluster, o Options) bool {
	return !o.NoGateway && (c.Spec.Gateway.Replicas == nil || *c.Spec.Gateway.Replicas > 0)
}

// checkGatewayFiles checks the gateway's users directory and TLS files and
// makes their paths absolute.
func (o *Options) checkGatewayFiles(runGateway bool) error {
	if o.GatewayUsersDir == "" && o.GatewayTLSCert == "" && o.GatewayTLSKey == "" {
		return nil
	}
	if !runGateway {
		return errors.New("cannot pass --gateway-users-dir or --gateway-tls-cert/--gateway-tls-key: the cluster runs no gateway (up --gateway=false, or spec.gateway.replicas 0)")
	}
	if (o.GatewayTLSCert == "") != (o.GatewayTLSKey == "") {
		return errors.New("cannot serve the gateway over TLS: --gateway-tls-cert and --gateway-tls-key go together")
	}
	for _, f := range []struct {
		flag string
		path *string
	}{{"--gateway-users-dir", &o.GatewayUsersDir}, {"--gateway-tls-cert", &o.GatewayTLSCert}, {"--gateway-tls-key", &o.GatewayTLSKey}} {
		if *f.path == "" {
			continue
		}
		abs, err := filepath.Abs(*f.path)
		if err != nil {
			return fmt.Errorf("cannot use %s %s: %w", f.flag, *f.path, err)
		}
		*f.path = abs
	}
	if o.GatewayUsersDir != "" {
		st, err := os.Stat(o.GatewayUsersDir)
		if err != nil {
			return fmt.Errorf("cannot use --gateway-users-dir: %w", err)
		}
		if !st.IsDir() {
			return fmt.Errorf("cannot use --gateway-users-dir %s: not a directory (it holds a file per user, named as the user and holding its password)", o.GatewayUsersDir)
		}
		// The gateway reads it at every AUTH and lists it for INFO: one
		// that cannot be read is refused now rather than at the first AUTH.
		if _, err := os.ReadDir(o.GatewayUsersDir); err != nil {
			return fmt.Errorf("cannot use --gateway-users-dir: %w", err)
		}
	}
	if o.GatewayTLSCert != "" {
		cert, err := os.ReadFile(o.GatewayTLSCert)
		if err != nil {
			return fmt.Errorf("cannot use --gateway-tls-cert: %w", err)
		}
		key, err := os.ReadFile(o.GatewayTLSKey)
		if err != nil {
			return fmt.Errorf("cannot use --gateway-tls-key: %w", err)
		}
		// As the gateway loads them when it starts: a mistake here would
		// otherwise show as a gateway that never becomes ready.
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			return fmt.Errorf("cannot use --gateway-tls-cert %s with --gateway-tls-key %s: %w", o.GatewayTLSCert, o.GatewayTLSKey, err)
		}
	}
	return nil
}
