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
package kubetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

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
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Option changes what Start installs.
type Option func(*options)

type options struct {
	crdDirs      []string
	noWatchCache bool
}

// WithoutWatchCache starts the API server with --watch-cache=false: every
// watch is served from etcd, so one from a resourceVersion that CompactEtcd
// removed gets 410 Gone at once (the watch cache may still hold it).
func WithoutWatchCache() Option {
	return func(o *options) { o.noWatchCache = true }
}

// ChaosMeshCRDDir holds the Chaos Mesh CRDs that `make chaos-crds` generates.
func ChaosMeshCRDDir() string {
	return filepath.Join(RepoRoot(), "internal", "kubetest", "testdata", "chaosmesh")
}

// WithChaosMesh installs Chaos Mesh's CRDs (ChaosMeshCRDDir) as well.
func WithChaosMesh() Option {
	return func(o *options) { o.crdDirs = append(o.crdDirs, ChaosMeshCRDDir()) }
}

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
			filepath.Join(root, "internal", "kubetest", "testdata"),
		}, o.crdDirs...),
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
	}
	if o.noWatchCache {
		env.ControlPlane.GetAPIServer().Configure().Set("watch-cache", "false")
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
	os.Exit(run(m, env, opts))
}

func run(m *testing.M, env **Env, opts []Option) int {
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
