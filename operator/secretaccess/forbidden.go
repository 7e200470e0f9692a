package secretaccess

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Forbidden reports whether err is the API server refusing a Secret request
// for lack of permission, and if so the status message that says what to do.
func Forbidden(err error, namespace, what string) (string, bool) {
	if !apierrors.IsForbidden(err) {
		return "", false
	}
	return fmt.Sprintf("the operator may not %s in namespace %s: it holds Secret permissions only in the namespaces "+
		"of the Helm chart's secretNamespaces value (or its watchNamespace); add %s there and upgrade the release "+
		"(docs/operator.md, Secrets)", what, namespace, namespace), true
}
