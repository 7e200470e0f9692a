package plan_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/certtest"
	"github.com/distcache/distcache/standalone/plan"
)

// TestGatewayUsersAndTLS checks the gateway's users directory and TLS
// files (distcache up --gateway-users-dir, --gateway-tls-cert,
// --gateway-tls-key): relative paths are made absolute and passed to the
// gateway as --users-dir, --tls-cert and --tls-key, and the process says
// it requires AUTH and serves TLS; files that are missing, unreadable or
// not a certificate and its key, half a pair, files without a gateway to
// pass them to, and the spec's Secrets are refused by Check and New alike,
// with an error that names the flags. spec.gateway.clusterFace passes
// --cluster-face: the gateway announces its loopback address, alone.
func TestGatewayUsersAndTLS(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.Mkdir(users, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(users, "app"), []byte("app-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := certtest.NewCA(t, dir, "ca")
	cert, key := ca.Server(t, "gateway")
	otherCert, _ := ca.Server(t, "other")
	// Relative paths are relative to the working directory of up.
	t.Chdir(dir)

	noReplicas := func(s *v1alpha1.CacheClusterSpec) { s.Gateway.Replicas = ptr.To(int32(0)) }
	tests := []struct {
		name string
		spec specOption
		opts plan.Options
		// wantArgs are the gateway's arguments after the common ones
		// (none: no users, no TLS); wantErr the error's text.
		wantArgs  []string
		wantErr   []string
		asNonRoot bool // unreadable files are readable to root
	}{{
		name: "neither",
	}, {
		name: "users, relative", opts: plan.Options{GatewayUsersDir: "users"},
		wantArgs: []string{"--users-dir=" + users},
	}, {
		name: "TLS, relative", opts: plan.Options{GatewayTLSCert: "gateway.pem", GatewayTLSKey: "gateway-key.pem"},
		wantArgs: []string{"--tls-cert=" + cert, "--tls-key=" + key},
	}, {
		name: "users and TLS", opts: plan.Options{GatewayUsersDir: users, GatewayTLSCert: cert, GatewayTLSKey: key},
		wantArgs: []string{"--users-dir=" + users, "--tls-cert=" + cert, "--tls-key=" + key},
	}, {
		name: "spec.gateway.clusterFace", spec: func(s *v1alpha1.CacheClusterSpec) { s.Gateway.ClusterFace = true },
		wantArgs: []string{"--cluster-face"},
	}, {
		name: "cluster face and users", spec: func(s *v1alpha1.CacheClusterSpec) { s.Gateway.ClusterFace = true },
		opts: plan.Options{GatewayUsersDir: users}, wantArgs: []string{"--users-dir=" + users, "--cluster-face"},
	}, {
		name: "a certificate without its key", opts: plan.Options{GatewayTLSCert: cert},
		wantErr: []string{"cannot serve the gateway over TLS: --gateway-tls-cert and --gateway-tls-key go together"},
	}, {
		name: "a key without its certificate", opts: plan.Options{GatewayTLSKey: key},
		wantErr: []string{"cannot serve the gateway over TLS: --gateway-tls-cert and --gateway-tls-key go together"},
	}, {
		name: "a missing users directory", opts: plan.Options{GatewayUsersDir: "nobody"},
		wantErr: []string{"cannot use --gateway-users-dir: ", filepath.Join(dir, "nobody"), "no such file or directory"},
	}, {
		name: "a users file instead of a directory", opts: plan.Options{GatewayUsersDir: filepath.Join(users, "app")},
		wantErr: []string{"cannot use --gateway-users-dir " + filepath.Join(users, "app") + ": not a directory"},
	}, {
		name: "an unreadable users directory", opts: plan.Options{GatewayUsersDir: "locked"}, asNonRoot: true,
		wantErr: []string{"cannot use --gateway-users-dir: ", "permission denied"},
	}, {
		name: "a missing certificate", opts: plan.Options{GatewayTLSCert: "missing.pem", GatewayTLSKey: key},
		wantErr: []string{"cannot use --gateway-tls-cert: ", filepath.Join(dir, "missing.pem"), "no such file or directory"},
	}, {
		name: "a missing key", opts: plan.Options{GatewayTLSCert: cert, GatewayTLSKey: "missing-key.pem"},
		wantErr: []string{"cannot use --gateway-tls-key: ", filepath.Join(dir, "missing-key.pem"), "no such file or directory"},
	}, {
		name: "a key of another certificate", opts: plan.Options{GatewayTLSCert: otherCert, GatewayTLSKey: key},
		wantErr: []string{"cannot use --gateway-tls-cert " + otherCert + " with --gateway-tls-key " + key + ": tls: private key does not match public key"},
	}, {
		name: "a CA's certificate as the key", opts: plan.Options{GatewayTLSCert: cert, GatewayTLSKey: ca.File},
		wantErr: []string{"cannot use --gateway-tls-cert " + cert + " with --gateway-tls-key " + ca.File},
	}, {
		name: "users without a gateway", opts: plan.Options{NoGateway: true, GatewayUsersDir: users},
		wantErr: []string{"cannot pass --gateway-users-dir or --gateway-tls-cert/--gateway-tls-key: the cluster runs no gateway"},
	}, {
		name: "TLS with spec.gateway.replicas 0", spec: noReplicas, opts: plan.Options{GatewayTLSCert: cert, GatewayTLSKey: key},
		wantErr: []string{"the cluster runs no gateway (up --gateway=false, or spec.gateway.replicas 0)"},
	}, {
		name: "spec.gateway.usersSecretName", spec: func(s *v1alpha1.CacheClusterSpec) { s.Gateway.UsersSecretName = "users" },
		opts:    plan.Options{GatewayUsersDir: users},
		wantErr: []string{"cannot run the gateway with usersSecretName users: standalone mode has no Secrets: pass the users as files with distcache up --gateway-users-dir DIR"},
	}, {
		name: "spec.gateway.tlsSecretName", spec: func(s *v1alpha1.CacheClusterSpec) { s.Gateway.TLSSecretName = "cert" },
		wantErr: []string{"cannot run the gateway with tlsSecretName cert: standalone mode has no Secrets: pass the certificate as files with distcache up --gateway-tls-cert FILE --gateway-tls-key FILE"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.asNonRoot {
				if os.Geteuid() == 0 {
					t.Skip("root reads any directory")
				}
				locked := filepath.Join(dir, "locked")
				if err := os.Mkdir(locked, 0); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = os.Remove(locked) })
			}
			var opts []specOption
			if tc.spec != nil {
				opts = append(opts, tc.spec)
			}
			c := newCluster(t, opts...)
			o := tc.opts
			o.RunDir, o.Binary, o.RedisServer, o.Ports = t.TempDir(), "/bin/distcache", "/bin/redis-server", sequentialPorts

			checked := o
			checkErr := plan.Check(c, &checked)
			p, err := plan.New(c, o)
			if len(tc.wantErr) > 0 {
				for _, e := range []error{checkErr, err} {
					if e == nil || !containsAll(e.Error(), tc.wantErr...) {
						t.Errorf("Check, New: %v, %v; want errors with %q", checkErr, err, tc.wantErr)
					}
				}
				if strings.Contains(tc.name, "SecretName") && (!errors.Is(checkErr, plan.ErrUnsupported) || !errors.Is(err, plan.ErrUnsupported)) {
					t.Errorf("Check, New: %v, %v; want ErrUnsupported", checkErr, err)
				}
				return
			}
			if checkErr != nil || err != nil {
				t.Fatalf("Check, New: %v, %v", checkErr, err)
			}
			for _, path := range []string{checked.GatewayUsersDir, checked.GatewayTLSCert, checked.GatewayTLSKey} {
				if path != "" && !filepath.IsAbs(path) {
					t.Errorf("Check left %s relative", path)
				}
			}
			gw, ok := p.Process("t-gateway")
			if !ok {
				t.Fatal("no gateway planned")
			}
			common := []string{"gateway", "--redis-addr=" + gw.Addr}
			tail := []string{"--map=" + p.MapFile, "--data-plane-key-dir=" + p.DataPlaneKeyDir, "--replay-protection=require", "--metrics-addr=" + gw.MetricsAddr, "--log-level=info"}
			if want := slices.Concat(common, tc.wantArgs, tail); !slices.Equal(gw.Args, want) {
				t.Errorf("gateway args\n%q\nwant\n%q", gw.Args, want)
			}
			if gw.Auth != (o.GatewayUsersDir != "") || gw.TLS != (o.GatewayTLSCert != "") {
				t.Errorf("gateway auth %v, TLS %v; want %v, %v", gw.Auth, gw.TLS, o.GatewayUsersDir != "", o.GatewayTLSCert != "")
			}
		})
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
