// Package manifest reads the cluster files of standalone mode (`distcache up
// -f cluster.yaml`): the same CacheCluster, CacheLayer and SwitchFabric YAML
// the operator reads from the API server, admitted exactly as the API server
// would admit it on create, without one running.
//
// The point is that one file means the same thing in both modes. So the
// Validator does not re-implement any rule: it compiles the CRDs embedded by
// package crds with the API server's own libraries (k8s.io/apiextensions-
// apiserver and k8s.io/apiserver) and calls them in the order the API server
// does for a create with fieldValidation=Strict (kubectl's default):
//
//  1. decode the JSON strictly, drop and report unknown fields (pruning and
//     ObjectMeta coercion) and apply the structural schema's defaults, as
//     the CRD handler's decoder does; unknown fields fail the way kubectl
//     shows them: `CacheCluster in version "v1alpha1" cannot be handled as a
//     CacheCluster: strict decoding error: unknown field "spec.foo"`;
//  2. settle the namespace and system metadata as the create handler and the
//     registry do;
//  3. run rest.BeforeCreate with a strategy that validates like the
//     custom-resource strategy: type and object metadata, the OpenAPI
//     schema, embedded objects, list-type invariants and then, unless one of
//     those errors blocks it, the CEL rules (x-kubernetes-validations) under
//     the API server's cost budget.
//
// Errors are the API server's own (apierrors.NewInvalid, NewBadRequest), so
// err.Error() is the message the API server returns for the same object,
// the one `kubectl apply` prints after `Error from server (Invalid): error
// when creating "cluster.yaml": `. The parity tests in api/v1alpha1
// hold both to that against a real kube-apiserver.
//
// Not reproduced: admission plugins (a namespace need not exist), the
// field manager (managedFields sent are dropped), server-side apply (whose
// errors differ) and request limits. A generated name (generateName) is
// admitted as by the server but refused by Load: standalone mode needs
// fixed names.
//
// Load and Parse read multi-document files into a Bundle (one CacheCluster
// and the CacheLayers and SwitchFabrics beside it), prefixing every error
// with the file and, for files with several documents, the document.
package manifest
