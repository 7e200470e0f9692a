package manifest

import (
	"context"
	"fmt"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/operation"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// coerce is unstructuredSchemaCoercer.apply of the CRD handler's decoder
// with returnUnknownFieldPaths (fieldValidation=Strict): it checks and
// prunes ObjectMeta, prunes fields the schema does not know and removes
// nulls that are neither nullable nor defaulted, and returns the paths of
// the unknown fields it dropped.
func (k *kindSchema) coerce(u *unstructured.Unstructured) ([]string, error) {
	kind, foundKind, err := unstructured.NestedString(u.Object, "kind")
	if err != nil {
		return nil, err
	}
	apiVersion, foundAPIVersion, err := unstructured.NestedString(u.Object, "apiVersion")
	if err != nil {
		return nil, err
	}
	objectMeta, foundObjectMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		ReturnUnknownFieldPaths: true,
	})
	if err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	if gv.Group == k.gvk.Group && kind == k.gvk.Kind {
		unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, k.structural, true,
			structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, k.structural)
		ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, k.structural, false,
			schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
		if ferr != nil {
			return nil, ferr
		}
		unknown = append(unknown, paths...)
	}
	// Restore the implicit meta fields, starting clean.
	if foundKind {
		u.SetKind(kind)
	}
	if foundAPIVersion {
		u.SetAPIVersion(apiVersion)
	}
	if foundObjectMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

// createStrategy is the create half of the custom-resource strategy
// (apiextensions-apiserver/pkg/registry/customresource, which cannot be
// imported without etcd storage), for rest.BeforeCreate to call.
type createStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	k *kindSchema
}

var _ rest.RESTCreateStrategy = createStrategy{}

// NamespaceScoped says whether the kind is namespaced.
func (s createStrategy) NamespaceScoped() bool { return s.k.namespaced }

// PrepareForCreate drops the status when the status subresource is on and
// sets the generation to 1.
func (s createStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	if s.k.hasStatus {
		delete(obj.(*unstructured.Unstructured).Object, "status")
	}
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetGeneration(1)
	}
}

// Validate is customResourceStrategy.Validate: the validator's checks of
// type and object metadata and the OpenAPI schema, embedded objects,
// list-type invariants, then the CEL rules unless an earlier error blocks
// them.
func (s createStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return field.ErrorList{field.Invalid(field.NewPath(""), u, fmt.Sprintf("has type %T. Must be a pointer to an Unstructured type", obj))}
	}
	var errs field.ErrorList
	errs = append(errs, s.validateResource(ctx, u)...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, s.k.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.k.structural, u.Object)...)
	if s.k.celValidator != nil {
		if blocking := blockingError(errs); blocking != nil {
			errs = append(errs, blocking)
		} else {
			celErrs, _ := s.k.celValidator.Validate(ctx, nil, s.k.structural, u.Object, nil, celconfig.RuntimeCELCostBudget)
			errs = append(errs, celErrs...)
		}
	}
	return errs
}

// validateResource is customResourceValidator.Validate without the scale
// subresource (the kinds have none).
func (s createStrategy) validateResource(ctx context.Context, u *unstructured.Unstructured) field.ErrorList {
	if errs := s.validateTypeMeta(u); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	errs = append(errs, s.validateObjectMeta(ctx, u)...)
	errs = append(errs, validation.ValidateCustomResource(nil, u.UnstructuredContent(), s.k.schemaValidator)...)
	return errs
}

// validateTypeMeta is customResourceValidator.ValidateTypeMeta.
func (s createStrategy) validateTypeMeta(u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if u.GetKind() != s.k.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), fmt.Sprintf("must be %v", s.k.gvk.Kind)))
	}
	if want := s.k.gvk.Group + "/" + s.k.gvk.Version; u.GetAPIVersion() != want {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), fmt.Sprintf("must be %v", want)))
	}
	return errs
}

// validateObjectMeta is customResourceValidator.validateObjectMetaDeclaratively.
func (s createStrategy) validateObjectMeta(ctx context.Context, u *unstructured.Unstructured) field.ErrorList {
	m := &metav1.ObjectMeta{}
	if raw := u.Object["metadata"]; raw != nil {
		mm, ok := raw.(map[string]any)
		if !ok {
			return field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, fmt.Sprintf("expected map[string]interface{}, got %T", raw))}
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(mm, m); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, err.Error())}
		}
	}
	return metavalidation.ValidateObjectMetaDeclaratively(ctx, operation.Create, m, nil, s.k.namespaced,
		metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"),
		utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta))
}

// blockingError is hasBlockingErr of the custom-resource strategy: after
// these errors of the OpenAPI schema the CEL rules are not run.
func blockingError(errs field.ErrorList) *field.Error {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

// WarningsOnCreate returns no warnings: standalone mode has no client to
// show them to.
func (createStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// Canonicalize does nothing, as for custom resources.
func (createStrategy) Canonicalize(runtime.Object) {}
