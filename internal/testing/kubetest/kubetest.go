// Package kubetest runs a real Kubernetes control plane for tests: envtest's
// kube-apiserver and etcd, built from the Go module proxy by
// hack/envtest-assets.sh (make test runs it), with the distcache CRDs from
// crds/ and a stand-in CRD for the redis-operator's Redis kind installed.
//
// The stand-in (testdata/redis-operator-standin.yaml) is not the
// OT-Container-Kit redis-operator's CRD: that project's Go module is not
// served here. Its schema covers the fields the operator sets, so the API
// server still checks them.
//
// WithChaosMesh also installs Chaos Mesh's CRDs (testdata/chaosmesh, from
// `make chaos-crds`), for the tests that apply the experiments of chaos/.
// WithPrometheusOperator installs prometheus-operator's ServiceMonitor,
// PodMonitor and PrometheusRule CRDs (testdata/promoperator, from `make
// prometheus-crds`), for the tests that install the Helm chart.
package kubetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/distcache/distcache/operator/apischeme"
)

// Versions of the control plane hack/envtest-assets.sh builds by default.
const (
	K8sVersion  = "1.37.1"
	EtcdVersion = "3.7.0"
)

// ServiceCIDR is the range the API server assigns Service IPs from: the
// benchmarking range (RFC 2544), which no real network uses.
const ServiceCIDR = "198.18.128.0/24"

// Env is a running control plane.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *kruntime.Scheme
	env    *envtest.Environment
}

// Assets is the directory with kube-apiserver and etcd: KUBEBUILDER_ASSETS,
// or the cache hack/envtest-assets.sh fills.
func Assets() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find envtest binaries: %w", err)
		}
		dir = filepath.Join(home, ".cache", "distcache", "envtest", "k8s-"+K8sVersion+"-etcd-"+EtcdVersion, "bin")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("cannot find envtest binary %s in %s (run `make envtest` or `make test`, which build it): %w", b, dir, err)
		}
	}
	return dir, nil
}

// RepoRoot is the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Option changes what Start installs.
type Option func(*options)

type options struct {
	crdDirs      []string
	auditLog     string
	plugins      []string
	noWatchCache bool
}

// WithAdmissionPlugins turns on admission plugins besides the API server's
// defaults (e.g. OwnerReferencesPermissionEnforcement, which many
// production clusters run and envtest does not).
func WithAdmissionPlugins(names ...string) Option {
	return func(o *options) { o.plugins = append(o.plugins, names...) }
}

// WithAuditLog makes the API server write an audit event (metadata level:
// who, verb, resource, response code) for every request it answers into
// path, one JSON object per line; ReadAudit reads them.
func WithAuditLog(path string) Option {
	return func(o *options) { o.auditLog = path }
}

// WithoutWatchCache starts the API server with --watch-cache=false: every
// watch is served from etcd, so one from a resourceVersion that CompactEtcd
// removed gets 410 Gone at once (the watch cache may still hold it).
func WithoutWatchCache() Option {
	return func(o *options) { o.noWatchCache = true }
}

// ChaosMeshCRDDir holds the Chaos Mesh CRDs that `make chaos-crds` generates.
func ChaosMeshCRDDir() string {
	return filepath.Join(RepoRoot(), "internal", "testing", "kubetest", "testdata", "chaosmesh")
}

// WithChaosMesh installs Chaos Mesh's CRDs (ChaosMeshCRDDir) as well.
func WithChaosMesh() Option {
	return func(o *options) { o.crdDirs = append(o.crdDirs, ChaosMeshCRDDir()) }
}

// PrometheusOperatorCRDDir holds the prometheus-operator CRDs that `make
// prometheus-crds` generates.
func PrometheusOperatorCRDDir() string {
	return filepath.Join(RepoRoot(), "internal", "testing", "kubetest", "testdata", "promoperator")
}

// WithPrometheusOperator installs prometheus-operator's monitoring CRDs
// (PrometheusOperatorCRDDir) as well.
func WithPrometheusOperator() Option {
	return func(o *options) { o.crdDirs = append(o.crdDirs, PrometheusOperatorCRDDir()) }
}

// controlPlaneStopTimeout bounds how long Stop waits for each process of
// the control plane before it kills it: the API server's request timeout
// and a margin.
const controlPlaneStopTimeout = 70 * time.Second

// Start starts the control plane and installs the CRDs.
func Start(opts ...Option) (*Env, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	s, err := apischeme.New()
	if err != nil {
		return nil, err
	}
	root := RepoRoot()
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths: append([]string{
			filepath.Join(root, "crds"),
			filepath.Join(root, "internal", "testing", "kubetest", "testdata"),
		}, o.crdDirs...),
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
		// kube-apiserver stops gracefully: it finishes the requests in
		// flight, each bounded by its request timeout (1 minute). On a
		// machine busy with other test packages that took longer than
		// envtest's default of 20 s, and the package failed after its
		// tests had passed.
		ControlPlaneStopTimeout: controlPlaneStopTimeout,
	}
	api := env.ControlPlane.GetAPIServer().Configure()
	// Service IPs from the benchmarking range, not envtest's 10.0.0.0/24.
	api.Set("service-cluster-ip-range", ServiceCIDR)
	if len(o.plugins) > 0 {
		api.Set("enable-admission-plugins", strings.Join(o.plugins, ","))
	}
	if o.auditLog != "" {
		policy, err := writeAuditPolicy(filepath.Dir(o.auditLog))
		if err != nil {
			return nil, err
		}
		api.Set("audit-policy-file", policy).Set("audit-log-path", o.auditLog).Set("audit-log-format", "json")
	}
	if o.noWatchCache {
		api.Set("watch-cache", "false")
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("cannot start envtest control plane: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("cannot create client: %w", err), env.Stop())
	}
	return &Env{Config: cfg, Client: c, Scheme: s, env: env}, nil
}

// Kubectl returns the path of the control plane's kubectl and a kubeconfig
// file in dir for an administrator (system:masters), for tests that run
// kubectl as a user would.
func (e *Env) Kubectl(dir string) (kubectl, kubeconfig string, err error) {
	u, err := e.env.ControlPlane.AddUser(envtest.User{Name: "kubectl-admin", Groups: []string{"system:masters"}}, e.Config)
	if err != nil {
		return "", "", fmt.Errorf("cannot add a kubectl user: %w", err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", "", fmt.Errorf("cannot write a kubeconfig: %w", err)
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		return "", "", fmt.Errorf("cannot write a kubeconfig: %w", err)
	}
	return filepath.Join(e.env.BinaryAssetsDirectory, "kubectl"), kubeconfig, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	if err := e.env.Stop(); err != nil {
		return fmt.Errorf("cannot stop envtest control plane: %w", err)
	}
	return nil
}

// Main runs a test package against one control plane: it starts it with
// opts, stores it in *env, runs the tests and stops it. A control plane that
// cannot start fails the package with the reason, rather than skipping its
// tests.
func Main(m *testing.M, env **Env, opts ...Option) {
	os.Exit(Run(m, env, opts...))
}

// Run is Main without the exit: it returns the tests' exit code, for a
// TestMain that has more to clean up.
func Run(m *testing.M, env **Env, opts ...Option) int {
	e, err := Start(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
