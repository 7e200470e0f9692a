// Package crds embeds the CustomResourceDefinitions of distcache.io that
// `make manifests` generates into this directory, so that standalone mode
// can default and validate a CacheCluster file with the same schema and CEL
// rules the API server applies.
package crds

import "embed"

// FS holds every generated CRD, one YAML file per resource.
//
//go:embed *.yaml
var FS embed.FS
