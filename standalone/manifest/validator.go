package manifest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/crds"
)

// ErrUnknownKind is wrapped by Admit, Load and Parse for an object whose
// apiVersion and kind name no CRD of package crds.
var ErrUnknownKind = errors.New("unknown kind")

// Validator defaults and validates distcache.io objects as the API server
// does on create. It is safe for concurrent use.
type Validator struct {
	kinds map[schema.GroupVersionKind]*kindSchema
}

// kindSchema is what the API server's CRD handler builds for one served
// version of a CRD: the structural schema (defaults pruned) for pruning,
// defaulting and CEL, the OpenAPI validator, and the CEL validator, built
// once.
type kindSchema struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	hasStatus  bool // the status subresource is enabled: create drops status

	structural      *structuralschema.Structural
	schemaValidator validation.SchemaValidator
	celValidator    *cel.Validator // nil without x-kubernetes-validations

	decoder  runtime.Decoder // the strict JSON serializer of fieldValidation=Strict
	strategy createStrategy
}

// NewValidator compiles every CRD of package crds: one schema and CEL
// validator per served version of each kind.
func NewValidator() (*Validator, error) {
	files, err := fs.Glob(crds.FS, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("cannot list the embedded CRDs: %w", err)
	}
	v := &Validator{kinds: map[schema.GroupVersionKind]*kindSchema{}}
	for _, f := range files {
		data, err := crds.FS.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("cannot read CRD %s: %w", f, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("cannot decode CRD %s: %w", f, err)
		}
		apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
		for i := range crd.Spec.Versions {
			ver := &crd.Spec.Versions[i]
			if !ver.Served {
				continue
			}
			k, err := compileKind(crd, ver)
			if err != nil {
				return nil, fmt.Errorf("cannot compile CRD %s version %s: %w", crd.Name, ver.Name, err)
			}
			v.kinds[k.gvk] = k
		}
	}
	if len(v.kinds) == 0 {
		return nil, errors.New("cannot build a validator: package crds embeds no CRD")
	}
	return v, nil
}

// compileKind builds what getOrCreateServingInfoFor in the CRD handler
// (apiextensions-apiserver/pkg/apiserver) builds for one version.
func compileKind(crd *apiextensionsv1.CustomResourceDefinition, ver *apiextensionsv1.CustomResourceDefinitionVersion) (*kindSchema, error) {
	if ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
		return nil, errors.New("cannot validate without an OpenAPI v3 schema")
	}
	if crd.Spec.PreserveUnknownFields {
		return nil, errors.New("cannot prune unknown fields: preserveUnknownFields is set")
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(ver.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("cannot convert the schema to the internal version: %w", err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("cannot build the structural schema: %w", err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("cannot prune the schema's defaults: %w", err)
	}
	sv, _, err := validation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("cannot build the schema validator: %w", err)
	}
	typer := crdserverscheme.NewUnstructuredObjectTyper()
	k := &kindSchema{
		gvk:             schema.GroupVersionKind{Group: crd.Spec.Group, Version: ver.Name, Kind: crd.Spec.Names.Kind},
		namespaced:      crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		hasStatus:       ver.Subresources != nil && ver.Subresources.Status != nil,
		structural:      s,
		schemaValidator: sv,
		celValidator:    cel.NewValidator(s, true, celconfig.PerCallLimit),
		decoder:         kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, unstructuredCreator{}, typer, kjson.SerializerOptions{Strict: true}),
	}
	k.strategy = createStrategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, k: k}
	return k, nil
}

// Kinds are the kinds the validator admits, sorted.
func (v *Validator) Kinds() []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(v.kinds))
	for gvk := range v.kinds {
		out = append(out, gvk)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// kindFor is the compiled schema of gvk, or an error wrapping
// ErrUnknownKind.
func (v *Validator) kindFor(gvk schema.GroupVersionKind) (*kindSchema, error) {
	if k, ok := v.kinds[gvk]; ok {
		return k, nil
	}
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, fmt.Errorf("cannot admit an object without apiVersion and kind: %w", ErrUnknownKind)
	}
	known := make([]string, 0, len(v.kinds))
	for _, k := range v.Kinds() {
		known = append(known, k.GroupVersion().String()+" "+k.Kind)
	}
	return nil, fmt.Errorf("cannot admit kind %q of apiVersion %q: %w; standalone mode reads %s",
		gvk.Kind, gvk.GroupVersion().String(), ErrUnknownKind, strings.Join(known, ", "))
}

// Admit applies the CRD defaults to u in place and validates it, as the API
// server does when it creates u with fieldValidation=Strict: unknown fields
// are an error, not pruned silently. A missing namespace becomes "default"
// (as with kubectl) and the status is dropped (the status subresource is
// on). The error, if any, is the API server's: err.Error() is its message,
// and apierrors.IsInvalid and IsBadRequest hold as for the server's.
// Unknown kinds wrap ErrUnknownKind. On error u is left unchanged.
func (v *Validator) Admit(ctx context.Context, u *unstructured.Unstructured) error {
	k, err := v.kindFor(u.GroupVersionKind())
	if err != nil {
		return err
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return fmt.Errorf("cannot encode %s %q: %w", k.gvk.Kind, u.GetName(), err)
	}
	out, err := k.admit(ctx, data, u.GetNamespace())
	if err != nil {
		return err
	}
	u.Object = out.Object
	return nil
}

// header is what Load needs of a document before admitting it.
type header struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// peek reads the header of a JSON object. Fields of the wrong type stay
// empty: the decoder reports them as the API server does.
func peek(data []byte) header {
	var h header
	_ = json.Unmarshal(data, &h) // fills every field it can
	return h
}

// admitJSON admits one object given as JSON, as the API server would admit
// it as a request body.
func (v *Validator) admitJSON(ctx context.Context, data []byte) (*unstructured.Unstructured, error) {
	h := peek(data)
	k, err := v.kindFor(h.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	return k.admit(ctx, data, h.Metadata.Namespace)
}

// admit runs the API server's create path on a request body for the
// object's namespace ("" means "default").
func (k *kindSchema) admit(ctx context.Context, body []byte, namespace string) (*unstructured.Unstructured, error) {
	// createHandler: decode, default, settle the namespace and metadata.
	u, err := k.decode(body)
	if err != nil {
		return nil, err
	}
	requestNamespace := metav1.NamespaceNone
	if k.namespaced {
		requestNamespace = namespace
		if requestNamespace == "" {
			requestNamespace = metav1.NamespaceDefault
		}
	}
	rest.WipeObjectMetaSystemFields(u)
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(requestNamespace, u); err != nil {
		return nil, err
	}
	// The field manager replaces what the client sent with its own entries.
	u.SetManagedFields(nil)

	// Store.create: system fields, generated name, then BeforeCreate with
	// the custom-resource strategy.
	rest.FillObjectMetaSystemFields(u)
	if u.GetGenerateName() != "" && u.GetName() == "" {
		u.SetName(k.strategy.GenerateName(u.GetGenerateName()))
	}
	ctx = genericapirequest.WithNamespace(ctx, requestNamespace)
	if err := rest.BeforeCreate(k.strategy, ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// decode is the CRD handler's decoder for fieldValidation=Strict: the
// strict JSON serializer, then unstructuredSchemaCoercer.apply (ObjectMeta
// coercion and pruning, reporting what it drops as unknown fields), then
// unstructuredDefaulter. Errors are what createHandler makes of them.
func (k *kindSchema) decode(body []byte) (*unstructured.Unstructured, error) {
	var strictErrs []error
	obj, gvk, err := k.decoder.Decode(body, &k.gvk, &unstructured.Unstructured{})
	if err != nil {
		se, ok := runtime.AsStrictDecodingError(err)
		if !ok || obj == nil {
			return nil, k.decodeError(gvk, err)
		}
		strictErrs = se.Errors()
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, k.decodeError(gvk, fmt.Errorf("decoded %T, not an unstructured object", obj))
	}
	unknown, err := k.coerce(u)
	if err != nil {
		return nil, k.decodeError(gvk, err)
	}
	for _, f := range unknown {
		strictErrs = append(strictErrs, fmt.Errorf(`unknown field "%s"`, f))
	}
	if len(strictErrs) > 0 {
		return nil, k.decodeError(gvk, runtime.NewStrictDecodingError(strictErrs))
	}
	structuraldefaulting.Default(u.Object, k.structural)
	return u, nil
}

// decodeError is transformDecodeError of k8s.io/apiserver's handlers: a
// BadRequest that names the kind the body declares and the kind served.
func (k *kindSchema) decodeError(gvk *schema.GroupVersionKind, err error) error {
	declared := k.gvk
	if gvk != nil && gvk.Kind != "" {
		declared = *gvk
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", declared.Kind, declared.Version, k.gvk.Kind, err))
}

// unstructuredCreator makes the empty objects the serializer decodes into,
// as the CRD handler's does.
type unstructuredCreator struct{}

// New is an empty unstructured object of kind.
func (unstructuredCreator) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}
