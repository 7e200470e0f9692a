package v1alpha1_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/distcache/distcache/internal/kubetest"
)

// env is the package's control plane: a real kube-apiserver and etcd with
// the CRDs from crds/ installed, shared by every test.
var env *kubetest.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts the control plane, runs the tests and stops it.
func run(m *testing.M) int {
	e, err := kubetest.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "v1alpha1 tests need the envtest control plane: %v\n", err)
		return 1
	}
	env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
