package secretaccess_test

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/distcache/distcache/operator/secretaccess"
)

func TestForbidden(t *testing.T) {
	secrets := schema.GroupResource{Resource: "secrets"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"forbidden", apierrors.NewForbidden(secrets, "shop-data-plane-key", errors.New("no RBAC")), true},
		{"forbidden wrapped", errors.Join(errors.New("cannot create"), apierrors.NewForbidden(secrets, "x", errors.New("no"))), true},
		{"not found", apierrors.NewNotFound(secrets, "x"), false},
		{"other", errors.New("connection refused"), false},
		{"nil", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg, ok := secretaccess.Forbidden(tc.err, "apps", "create Secrets")
			if ok != tc.want {
				t.Fatalf("Forbidden(%v) = %v, want %v", tc.err, ok, tc.want)
			}
			if ok && (!strings.Contains(msg, "namespace apps") || !strings.Contains(msg, "secretNamespaces")) {
				t.Errorf("message %q does not name the namespace and the chart value", msg)
			}
		})
	}
}
