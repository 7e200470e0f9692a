// Package rbac_test runs the operator as its ServiceAccount, with exactly the
// RBAC that config/rbac grants (generated from the +kubebuilder:rbac
// markers; the Helm chart's rules come from it), through named scenarios on
// a real API server that authorizes with RBAC and writes an audit log. The
// scenarios must reach their outcomes with those permissions, the API
// server must refuse none of the operator's requests, and every permission
// granted must be used by a request it allowed during a named scenario:
// without that permission the request is refused and the scenario does not
// reach its outcome.
package rbac_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

var (
	env      *kubetest.Env
	auditLog string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "distcache-rbac-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	auditLog = filepath.Join(dir, "audit.log")
	code := kubetest.Run(m, &env, kubetest.WithAuditLog(auditLog),
		kubetest.WithAdmissionPlugins("OwnerReferencesPermissionEnforcement"))
	os.RemoveAll(dir)
	os.Exit(code)
}
