// Package secretaccess holds the operator's Secret permissions and explains
// a refusal of them.
//
// The operator creates each CacheCluster's data-plane key, and it reads
// a SwitchFabric's Secrets: its TLS Secret, and those of its
// pipelineSource (a Secret holding the compiled program, an image pull
// Secret). It reads no other Secret and lists or watches none. Its ClusterRole grants nothing on
// Secrets: the markers below generate a separate ClusterRole
// (config/rbac/secrets/role.yaml) that the Helm chart binds with a
// RoleBinding in each namespace of its secretNamespaces value (or in
// watchNamespace's Role). In any other namespace the API server refuses the
// operator's Secret requests, and the object's status says which
// namespace to add (Forbidden).
package secretaccess

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create
