package v1alpha1_test

import (
	"testing"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

// env is the package's control plane: a real kube-apiserver and etcd with
// the CRDs from crds/ installed, shared by every test.
var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }
