// Package depsanchor holds blank imports while packages that use them are written.
package depsanchor

import (
	_ "github.com/prometheus/common/expfmt"
	_ "golang.org/x/time/rate"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	_ "k8s.io/apiserver/pkg/apis/cel"
	_ "k8s.io/apimachinery/pkg/api/validation"
	_ "sigs.k8s.io/yaml"
)
