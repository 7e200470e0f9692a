// Package apischeme builds the runtime.Scheme the operator and its tests
// use: the built-in Kubernetes kinds and the distcache.io/v1alpha1 ones.
package apischeme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/distcache/distcache/api/v1alpha1"
)

// New returns a scheme with the built-in kinds and the distcache.io ones.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("cannot build scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("cannot build scheme: %w", err)
	}
	return s, nil
}
